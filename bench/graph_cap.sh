#!/bin/bash
# --max-feature-nodes: time and peak memory of the 20-token graph with every feature, and
# capped at 8192 and 4096 feature nodes; then a 58-token prompt capped at 8192 (refused
# without a cap). Run alone on a quiet machine; results in bench/README.md. The graph's own
# cost is measured: --control-graphs 0 (each decoder-shuffled control costs about one more
# graph; set CONTROLS=3 to include them and their scores).
#   bash bench/graph_cap.sh TRANSCODER_RUN OUT_DIR
set -euo pipefail
TC="$1"; OUT="$2"; CONTROLS="${CONTROLS:-0}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
P20="When the early morning train finally arrived at the crowded station, the tired conductor handed the ticket to the"
P58="The old lighthouse keeper climbed the narrow spiral stairs every evening to light the lamp that guided fishing boats safely past the rocks. One stormy night in late November, the wind howled so loudly that he could barely hear the waves crashing below, and when he finally reached the top he saw that the"
uptime
for cap in all 8192 4096; do
  extra=()
  [ "$cap" != all ] && extra=(--max-feature-nodes "$cap")
  /usr/bin/time -v .venv/bin/interp graph "$P20" --transcoders "$TC" "${extra[@]}" \
      --control-graphs "$CONTROLS" \
      --out "$OUT/g20-$cap" > "$OUT/g20-$cap.log" 2>&1
  echo "20 tokens, $cap:"; grep -E "Maximum resident|Elapsed" "$OUT/g20-$cap.log"
  uptime
done
.venv/bin/interp graph "$P58" --transcoders "$TC" --control-graphs "$CONTROLS" \
    --out "$OUT/g58-all" 2>&1 | tail -1 || true
/usr/bin/time -v .venv/bin/interp graph "$P58" --transcoders "$TC" --max-feature-nodes 8192 \
    --control-graphs "$CONTROLS" \
    --out "$OUT/g58-8192" > "$OUT/g58-8192.log" 2>&1
echo "58 tokens, 8192:"; grep -E "Maximum resident|Elapsed" "$OUT/g58-8192.log"
uptime
for d in "$OUT"/g*/; do
  .venv/bin/python - "$d" <<'PY'
import json, sys
g = json.load(open(sys.argv[1] + "graph.json"))
a = g.get("agreement", {})
print(sys.argv[1], g["n_active_features"], g.get("n_feature_nodes"), g["n_nodes"],
      f"{g['elapsed_s']:.0f} s", f"rep {g['replacement_score']:.3f}",
      f"comp {g['completeness_score']:.3f}", f"real {g['target_real']:.6f}",
      f"repl {g['target_replacement']:.6f}", f"sum {g['target_edge_sum']:.6f}",
      "spearman_real", a.get("spearman_real"), a.get("spearman_real_ci95"),
      "controls", g.get("controls", {}).get("replacement_scores"),
      "sign", a.get("sign_real"), "null", a.get("sign_real_null"), "p", a.get("sign_real_p"))
PY
done
