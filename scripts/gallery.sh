#!/bin/sh
# Regenerates docs/gallery/ and docs/gallery.md: every chart kind at screen and at paper size
# (PNG to look at; PDF and SVG beside the paper ones). Usage: scripts/gallery.sh [path/to/rsim]
set -eu
cd "$(dirname "$0")/.."
RSIM=${1:-build/rsim}
OUT=docs/gallery
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT/screen" "$OUT/paper"

# kind | scenario | figure file stem | what it shows
cat > "$TMP/list" <<'LIST'
roofline|group_conv_sweep|roofline_rtx3080|roofline, one platform: layers on the roofs, ridge marked
roofline (what-if overlay)|avx512_clock_whatif|roofline|what-if overlay: one roof per variant
roofline (numbered key)|resnet50|roofline_rtx3080|a crowded roofline: ResNet-50's layers
trend|group_conv_sweep|trend_intensity_vs_groups|trend: intensity against a sweep variable, ridges as references
trend (time)|study_batch|trend_time_per_image_rtx3080|trend: time per image against batch, one line per network
layers|resnet50|layers_rtx3080|per-layer time bars
roofline (platform overlay)|study_platforms|roofline_networks|five platforms on one chart: each one's roofs in its colour, ridges named, networks as points
heatmap|study_avx512_16core_grid|heatmap_avx512_16core|heatmap over a two-variable what-if grid: values in one format, the colour bar's unit in its title
heatmap (LLM decode)|llm_decode|tokens_h100_fp16|decode throughput over context × batch (cell values at screen size, where they fit: 1.53k)
compare|study_compare|speedup_resnet50_b32|a bar per GPU of ResNet-50's time at batch 32 in its parts (work by bound, launch overhead), over the A100's, with the speedup after each bar
serving curve|serving_llama3_h100|serving_ttft_p99_s_vs_rate|a served LLM's p99 time to first token against the Poisson arrival rate (a request-level simulation), the SLO dashed
latency CDF|serving_replicas_h100|cdf_ttft|the distribution of time to first token at 60 requests/s on 1, 2 and 4 H100 engines behind a least-loaded router (a request-level simulation), p50/p90/p99 dotted, the SLO dashed
trend (memory footprint)|llm_footprint|footprint|memory footprint against context (binary ticks: 1 Ki … 128 Ki), each GPU's memory size as a labelled reference
LIST

for style in screen paper; do
  formats=png
  [ "$style" = paper ] && formats=png,pdf,svg
  for sc in $(cut -d'|' -f2 "$TMP/list" | sort -u); do
    "$RSIM" run "scenarios/$sc.yaml" --quiet --style "$style" --format "$formats" --out "$TMP/$style/$sc"
  done
done

{
  echo "# Figure gallery"
  echo
  echo "Every chart kind, at screen size (\`style: screen\`, the default: 9 × 6 in, 9 pt) and at paper size"
  echo "(\`style: paper\`: 88 × 66 mm, one column of a two-column paper, 8 pt text, PDF page of exactly that"
  echo "size with its font embedded, SVG text as \`<text>\`). Regenerate with \`scripts/gallery.sh\` (after"
  echo "\`make build\`)."
  echo
  while IFS='|' read -r kind sc stem what; do
    name=$(echo "$sc-$stem" | tr -c 'A-Za-z0-9_.\n-' '_')
    cp "$TMP/screen/$sc/$stem.png" "$OUT/screen/$name.png"
    for ext in png pdf svg; do cp "$TMP/paper/$sc/$stem.$ext" "$OUT/paper/$name.$ext"; done
    echo "## $kind — \`scenarios/$sc.yaml\`"
    echo
    echo "$what."
    echo
    echo "| screen | paper (88 × 66 mm) |"
    echo "|---|---|"
    echo "| ![$kind, screen](gallery/screen/$name.png) | ![$kind, paper](gallery/paper/$name.png) <br> [PDF](gallery/paper/$name.pdf) · [SVG](gallery/paper/$name.svg) |"
    echo
  done < "$TMP/list"
} > docs/gallery.md
echo "wrote docs/gallery.md and $(find "$OUT" -type f | wc -l) files in $OUT/"
