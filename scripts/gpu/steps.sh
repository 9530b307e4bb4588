# Sourced by the scripts/gpu/run*.sh calls: W (the output folder) and ARCHIVE (the .tgz it is packed
# into, beside W) set first. step NAME SECONDS COMMAND... runs COMMAND bounded by SECONDS into
# W/NAME.log, says how it ended, and packs W at once, so a step that fails or runs over leaves the
# others' data.
pack() { tar czf "$ARCHIVE" -C "$(dirname "$W")" "$(basename "$W")"; }
step() {
    local name=$1 secs=$2; shift 2
    local t0=$SECONDS
    timeout "$secs" "$@" >"$W/$name.log" 2>&1
    local rc=$?
    echo "== $name: rc $rc in $((SECONDS - t0)) s"
    tail -n 4 "$W/$name.log"
    pack
}
