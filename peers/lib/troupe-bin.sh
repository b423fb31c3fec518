# troupe-bin.sh, sourced: find_troupe_bin ROOT prints the troupe binary the peer checks drive:
# TROUPE_EXE when set, else the workspace's debug build brought up to date with cargo (a stale
# binary could lack a command or a key), else `troupe` on PATH. Prints why and returns 1 when
# there is none.
find_troupe_bin() {
    local root=$1 bin=${TROUPE_EXE:-}
    if [[ -z $bin ]] && command -v cargo >/dev/null 2>&1; then
        local target_dir=${CARGO_TARGET_DIR:-$root/target}
        [[ $target_dir == /* ]] || target_dir=$root/$target_dir
        (cd "$root" && cargo build --quiet -p troupe-cli --bin troupe) >&2 ||
            { echo "cargo build -p troupe-cli failed" >&2; return 1; }
        bin=$target_dir/debug/troupe
    fi
    [[ -n $bin ]] || bin=$(command -v troupe || true)
    [[ -n $bin ]] || { echo "no troupe binary (set TROUPE_EXE, or install cargo)" >&2; return 1; }
    [[ -x $bin ]] || { echo "$bin is not an executable troupe binary" >&2; return 1; }
    echo "$bin"
}
