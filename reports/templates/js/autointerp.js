(function () {
  "use strict";
  var box = document.getElementById("ai-search");
  var root = document.getElementById("ai-features");
  if (!box || !root) { return; }
  box.addEventListener("input", function () {
    var q = box.value.trim().toLowerCase();
    root.querySelectorAll("tbody tr").forEach(function (tr) {
      tr.hidden = q !== "" && tr.textContent.toLowerCase().indexOf(q) === -1;
    });
  });
})();
