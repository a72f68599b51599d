#!/usr/bin/env bash
# tests/layers.sh - who may include whom (docs/contributing.md, "Layers"): every
# #include "..." of aidc's own folders names a folder the includer's layer may use.
# Also: no PGresult or PQ* row access outside db/ (db/ owns SQL and the shape of rows),
# and no source file over 800 lines. Prints each breach; exits 1 if there is one.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# folder: the folders its files may include (besides its own)
declare -A may=(
    [lib]=""
    [db]="lib"
    [audit]="lib db"
    [billing]="lib db storage"
    [storage]="lib"
    [backends]="lib storage"
    [images]="lib db audit"
    [sched]="lib db audit backends storage"
    [server]="lib db audit billing backends images sched storage"
    [api]="lib db audit billing backends images sched server storage"
    [deploy]="lib"
)
# a/b/../c -> a/c, ./x -> x, in bash alone: forking realpath and sed for each of
# ~2,000 includes took over a minute on a busy 2-CPU machine
normpath() {
    local IFS=/ part out=() parts
    read -ra parts <<<"$1"   # no globbing of the parts
    for part in "${parts[@]}"; do
        case $part in
        '' | .) ;;
        ..) if [ ${#out[@]} -gt 0 ] && [ "${out[-1]}" != .. ]; then
                unset 'out[-1]'
            else
                out+=(..)
            fi ;;
        *) out+=("$part") ;;
        esac
    done
    REPLY="${out[*]}"
}
bad=0
for dir in "${!may[@]}"; do
    [ -d "$dir" ] || continue
    while IFS= read -r hit; do
        file=${hit%%:*}
        inc=${hit#*include}
        inc=${inc#*\"}
        inc=${inc%%\"*}
        # an absolute path into the tree is judged as the relative one it names
        [[ $inc == "$PWD"/* ]] && inc=${inc#"$PWD"/}
        if [[ $inc == /* ]]; then
            echo "layers: $file includes $inc: an absolute path (include by the tree's path)"
            bad=1
            continue
        fi
        # resolve against the file's folder, then the root (-I root)
        normpath "${file%/*}/$inc"
        path=$REPLY
        [ -e "$path" ] || { normpath "$inc"; path=$REPLY; }
        top=${path%%/*}
        fdir=${file%%/*}
        [ "$top" = "$fdir" ] && continue
        [ -d "$top" ] || continue   # a generated file or a system header
        ok=0
        for allowed in ${may[$dir]}; do
            [ "$top" = "$allowed" ] && ok=1
        done
        if [ "$ok" = 0 ]; then
            echo "layers: $file includes $inc: $fdir/ may include only ${may[$dir]:-nothing outside itself}"
            bad=1
        fi
    done < <(grep -rHn --include='*.c' --include='*.h' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$dir")
done

# db/ owns the rows: nobody else sees a PGresult or reads a column
while IFS= read -r hit; do
    echo "layers: $hit: rows come typed out of db/, not as a PGresult"
    bad=1
done < <(grep -rHnE --include='*.c' --include='*.h' '\bPGresult\b|\bPQ(getvalue|getisnull|ntuples|nfields|fname|clear)\b' \
             lib storage server api audit billing backends images sched 2>/dev/null)

# small files: one past 800 lines is a sign to split
while read -r n f; do
    [ "$f" = total ] && continue
    if [ "$n" -gt 800 ]; then
        echo "layers: $f has $n lines (800 at most: split it by responsibility)"
        bad=1
    fi
done < <(find lib storage server api db audit billing backends images sched tests deploy \
              \( -name build -o -name node_modules \) -prune -o \
              -type f \( -name '*.c' -o -name '*.h' \) -exec wc -l {} +)
[ "$bad" = 0 ] && echo "layers: every include follows the layers; no PGresult outside db/; no file over 800 lines"
exit "$bad"
