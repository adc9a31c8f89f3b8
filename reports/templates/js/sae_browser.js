(function () {
  "use strict";
  var box = document.getElementById("fb-search");
  var status = document.getElementById("fb-status");
  if (!box) { return; }
  var cards = Array.prototype.slice.call(document.querySelectorAll("article.fb-feature"));
  function matches(card, raw) {
    var q = raw.trim();
    var num = /^#?(\d+)$/.exec(q);
    if (num) { return card.getAttribute("data-index") === String(Number(num[1])); }
    if (q.length >= 2 && q.charAt(0) === '"' && q.charAt(q.length - 1) === '"') {
      q = q.slice(1, -1);
    }
    var text = (card.getAttribute("data-search") || "").toLowerCase();
    return text.indexOf(q.toLowerCase()) !== -1;
  }
  function apply() {
    var empty = box.value.trim() === "";
    var shown = 0;
    cards.forEach(function (card) {
      var hit = empty || matches(card, box.value);
      card.hidden = !hit;
      if (hit) { shown += 1; }
    });
    if (status) {
      status.textContent = empty ? cards.length + " features"
        : shown + " of " + cards.length + " features match";
    }
  }
  box.addEventListener("input", apply);
  apply();
})();
