#!/usr/bin/env bash
# Opens an HTML report in a real browser (headless Chromium, Debian's `chromium` package) and
# checks that it renders offline: no console message and no script error, the charts and the
# timelines in the DOM, every relative link present next to the page, and a screenshot that is
# not blank (much larger than the screenshot of an empty page of the same size).
#
#   check_page.sh --demo DEMO_EXE WORKDIR [MIN_KERNELS]   runs the demo into WORKDIR/out first
#                                                          (and checks it says where it wrote)
#   check_page.sh --page PAGE.html WORKDIR [MIN_KERNELS]
#
# Exit 0: ok; 77: no chromium (ctest SKIP_RETURN_CODE); anything else: a failure, said as FAIL:.
set -uo pipefail

fail() { echo "FAIL: $*"; exit 1; }
[ $# -ge 3 ] || { echo "usage: $0 --demo EXE|--page PAGE WORKDIR [MIN_KERNELS]" >&2; exit 2; }
mode=$1 arg=$2 work=$3 min_kernels=${4:-1}

# PTPU_BROWSER: another Chromium binary (or a missing one, to see the skip).
browser=${PTPU_BROWSER:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$browser" ] || [ ! -x "$browser" ]; then
    echo "SKIP: chromium is not installed (tools/test installs it: tools/deps.sh, ptpu_test_packages)"
    exit 77
fi

rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
case "$mode" in
    --demo)
        "$arg" --out "$work/out" > "$work/demo.txt" 2>&1 || { cat "$work/demo.txt"; fail "the demo failed"; }
        page="$work/out/index.html"
        grep -q "Wrote .*index.html" "$work/demo.txt" || fail "the demo does not say which folder it wrote"
        ;;
    --page) page=$arg ;;
    *) fail "unknown mode $mode" ;;
esac
[ -s "$page" ] || fail "no page at $page"
dir=$(cd "$(dirname "$page")" && pwd)
url="file://$dir/$(basename "$page")"

# Offline by construction: nothing to fetch (no src=, no <link>, no @import, no url() of another
# document; url(#id) within the page is fine), and every relative href is a file next to the page.
external='<link|<img|<iframe|[[:space:]]src=|@import|url\(["'"'"']?[^#"'"'"' )]'
if grep -Eiq "$external" "$page"; then
    fail "the page loads an external resource: $(grep -Eio "$external[^>]*" "$page" | head -3)"
fi
links=0
while IFS= read -r href; do
    case "$href" in '#'*) continue ;; *://*) fail "absolute link $href" ;; esac
    [ -s "$dir/$href" ] || fail "link $href: no such file next to the page"
    links=$((links + 1))
done < <(grep -Eo 'href="[^"]*"' "$page" | sed 's/^href="//; s/"$//')

# Chromium as root needs --no-sandbox; its own profile in WORKDIR; no host resolves (offline).
run() {
    timeout 60 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
        --user-data-dir="$work/profile" --host-resolver-rules="MAP * ~NOTFOUND" --hide-scrollbars "$@"
}

# 1. The DOM after the page's scripts ran, and the console.
run --enable-logging=stderr --v=0 --virtual-time-budget=3000 --dump-dom "$url" > "$work/dom.html" 2> "$work/console.txt"
[ -s "$work/dom.html" ] || { tail -20 "$work/console.txt"; fail "chromium dumped no DOM"; }
if grep -q ':CONSOLE' "$work/console.txt"; then
    fail "console messages: $(grep ':CONSOLE' "$work/console.txt" | head -5)"
fi
grep -q 'data-ptpu-error="1"' "$work/dom.html" &&
    fail "script error recorded in the page: $(grep -o 'script error: [^<]*' "$work/dom.html" | head -3)"
grep -q 'data-ptpu-script="ran"' "$work/dom.html" || fail "the page's script did not run to its end"
kernels=$(grep -o '<section class="kernel"' "$work/dom.html" | wc -l)
[ "$kernels" -ge "$min_kernels" ] || fail "$kernels kernel sections, expected at least $min_kernels"
for ((k = 0; k < kernels; ++k)); do
    for id in "k$k-table" "k$k-bars" "k$k-timeline-best"; do
        grep -q "id=\"$id\"" "$work/dom.html" || fail "no element with id $id"
    done
done
svgs=$(grep -o '<svg' "$work/dom.html" | wc -l)
rects=$(grep -o '<rect' "$work/dom.html" | wc -l)
[ "$svgs" -ge $((2 * kernels)) ] || fail "$svgs <svg> elements for $kernels kernels (bars and timelines)"
[ "$rects" -ge $((20 * kernels)) ] || fail "only $rects <rect> elements: the charts are empty"

# 2. A screenshot, and one of an empty page of the same size: the page's must be a real PNG of
# that size and much larger (a blank or single-colour picture compresses to almost nothing).
w=1400 h=1800
printf '<!DOCTYPE html><html><body></body></html>' > "$work/blank.html"
run --window-size=$w,$h --screenshot="$work/page.png" "$url" > /dev/null 2> "$work/shot.txt"
run --window-size=$w,$h --screenshot="$work/blank.png" "file://$work/blank.html" > /dev/null 2>> "$work/shot.txt"
for f in page blank; do
    [ -s "$work/$f.png" ] || { tail -5 "$work/shot.txt"; fail "no screenshot $f.png"; }
done
[ "$(od -An -tx1 -N8 "$work/page.png" | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "page.png is not a PNG"
# IHDR: width and height, big-endian, at bytes 16..23.
dims=$(od -An -tu1 -j16 -N8 "$work/page.png" | awk '{print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8}')
[ "$dims" = "${w}x${h}" ] || fail "screenshot is $dims, expected ${w}x${h}"
page_bytes=$(stat -c %s "$work/page.png") blank_bytes=$(stat -c %s "$work/blank.png")
if command -v python3 > /dev/null; then
    # Decode a quarter-scale screenshot (zlib, PNG row filters) and count its colours: a blank
    # or single-colour picture fails however it compresses.
    run --window-size=$w,$h --force-device-scale-factor=0.25 --screenshot="$work/small.png" "$url" \
        > /dev/null 2>> "$work/shot.txt"
    pixels=$(python3 - "$work/small.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR": ihdr = struct.unpack(">IIBBBBB", body)
    if kind == b"IDAT": idat += body
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = ihdr
if depth != 8 or ctype not in (2, 6) or interlace: print("undecodable"); sys.exit()
bpp = 3 if ctype == 2 else 4
raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line)); prev = line
counts = {}
for line in rows:
    for x in range(0, stride, bpp): counts[line[x:x + 3]] = counts.get(line[x:x + 3], 0) + 1
background = max(counts.values())
print(len(counts), (w * h - background) / (w * h))
PY
)
    case "$pixels" in
        undecodable) ;;
        *) read -r colours share <<< "$pixels"
           awk -v c="$colours" -v s="$share" 'BEGIN { exit !(c >= 4 && s >= 0.02) }' ||
               fail "the screenshot looks blank: $colours colours, ${share} of it not the background colour" ;;
    esac
else
    pixels="not decoded (no python3)"
    [ "$page_bytes" -gt $((2 * blank_bytes)) ] ||
        fail "the screenshot looks blank: $page_bytes bytes against $blank_bytes for an empty page"
fi

echo "browser check: ok: $kernels kernels, $svgs svg, $rects rect, $links links to files next to the page," \
     "no console message, screenshot $dims of $page_bytes bytes (empty page: $blank_bytes; colours, non-background share: $pixels)"
