#!/usr/bin/env bash
# check-observability.sh [SOURCE_DIR] - checks deploy/prometheus and deploy/grafana
# (ctest: deploy/observability).
#
#  1. promtool check config of deploy/prometheus/prometheus.yml (it loads the rules),
#     and of its commented kubernetes_sd example where this promtool knows
#     kubernetes_sd_configs (Debian's does not);
#  2. promtool check rules and promtool test rules (aidc-alerts.test.yml: every alert
#     fires on a broken series and stays quiet on a healthy one);
#  3. the Grafana dashboard: the JSON parses; every panel has an id (unique), a
#     gridPos inside the 24-column grid that overlaps no other panel, a title, the
#     ${DS_PROMETHEUS} data source and at least one target with an expression; the
#     DS_PROMETHEUS and instance variables exist; every expression parses as PromQL
#     (promtool, Grafana's variables replaced); every recording rule it names is
#     defined in aidc-alerts.yml;
#  4. every aidc_* metric the rules and the dashboard name (histogram suffixes
#     _bucket/_sum/_count stripped) is documented in docs/observability.md, and is a
#     family that a real aidcd exposes: a throwaway database (created as the
#     superuser, migrated with `aidcd migrate`), `aidcd serve` on a free loopback
#     port with one local cluster registered, its /metrics `# TYPE` lines. A missing
#     family fails the test and is named.
#
# Environment: AIDC_BIN (the aidcd binary, default SOURCE_DIR/build/aidcd),
# AIDC_TEST_APP_URL, AIDC_TEST_OWNER_URL, AIDC_TEST_SUPERUSER_URL (tests/run.sh sets
# them; without the first two, steps 1-3 run and the test reports skipped).
# Exit: 0 passed, 1 failed, 77 skipped (no promtool or python3, or no PostgreSQL).
set -uo pipefail

src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
bin=$(realpath -m -- "${AIDC_BIN:-$src/build/aidcd}")
cd "$src" || exit 1
# relative to the source tree, so the messages name files as the repository does
prom=deploy/prometheus
dash=deploy/grafana/aidc-dashboard.json
doc=docs/observability.md

for tool in promtool python3; do
    if ! command -v $tool >/dev/null; then
        echo "skipped: $tool not found (deploy/install-deps.sh ops installs prometheus for promtool)"
        exit 77
    fi
done

tmp=$(mktemp -d /tmp/aidc-observability.XXXXXX)
failures=0 passes=0
server_pid='' dbname='' db_admin_url=''
ok() { passes=$((passes + 1)); echo "ok - $*"; }
fail() { failures=$((failures + 1)); echo "FAIL - $*"; }

cleanup() {
    if [ -n "$server_pid" ]; then
        kill -TERM "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
    fi
    if [ -n "$dbname" ]; then
        psql -X -q -d "$db_admin_url" -c "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" \
            >/dev/null 2>&1
    fi
    if [ "$failures" -eq 0 ]; then
        rm -rf "$tmp"
    else
        echo "kept for a look: $tmp"
    fi
}
trap cleanup EXIT

# ---- 1. the configuration ---------------------------------------------------------
if out=$(promtool check config "$prom/prometheus.yml" 2>&1); then
    ok "promtool check config prometheus.yml"
else
    fail "promtool check config prometheus.yml:"$'\n'"$out"
fi

{
    echo "scrape_configs:"
    sed -n '/^# --- kubernetes_sd example/,/^# --- end/{/^# ---/d;s/^#//;p}' "$prom/prometheus.yml"
} >"$tmp/k8s.yml"
if ! grep -q kubernetes_sd_configs "$tmp/k8s.yml"; then
    fail "prometheus.yml: no '# --- kubernetes_sd example' block found"
elif out=$(promtool check config "$tmp/k8s.yml" 2>&1); then
    ok "promtool check config of the kubernetes_sd example"
elif grep -q "field kubernetes_sd_configs not found" <<<"$out"; then
    echo "skip - the kubernetes_sd example: this promtool is built without kubernetes_sd_configs"
else
    fail "promtool check config of the kubernetes_sd example:"$'\n'"$out"
fi

# ---- 2. the rules and their unit tests --------------------------------------------
if out=$(promtool check rules "$prom/aidc-alerts.yml" 2>&1); then
    ok "promtool check rules aidc-alerts.yml"
else
    fail "promtool check rules aidc-alerts.yml:"$'\n'"$out"
fi
if out=$(cd "$prom" && promtool test rules aidc-alerts.test.yml 2>&1); then
    ok "promtool test rules aidc-alerts.test.yml"
else
    fail "promtool test rules aidc-alerts.test.yml:"$'\n'"$out"
fi

# ---- 3. and 4.: the dashboard, the names --------------------------------------------
cat >"$tmp/check.py" <<'PY'
"""Helpers of check-observability.sh: dashboard checks and metric names."""
import json
import re
import sys

NAME = re.compile(r"(?<![A-Za-z0-9_:])aidc_[A-Za-z0-9_]*[A-Za-z0-9]")
HIST_SUFFIXES = ("_bucket", "_sum", "_count")
PANEL_DS = "${DS_PROMETHEUS}"


def strip_comments(text):
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))


def names_in(text):
    return set(NAME.findall(text))


def recording_names(expr):
    """level:metric:ops names in an expression, quoted strings left out."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    bare = re.sub(r"\[[^\]]*\]", "[]", bare)  # ranges and subqueries ([5m:1m])
    return set(re.findall(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*:[A-Za-z0-9_:]*[A-Za-z0-9_]",
                          bare))


def all_panels(panels):
    for p in panels:
        yield p
        yield from all_panels(p.get("panels") or [])


def dashboard(path, rules_path, out_rules, out_names):
    """Checks the dashboard; writes its expressions as a rules file for promtool and
    the metric names it uses. Prints problems; exits 1 if any."""
    problems = []
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{path}: {e}")
        sys.exit(1)
    if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 36:
        problems.append("schemaVersion missing or older than 36")
    for key in ("title", "uid"):
        if not d.get(key):
            problems.append(f"dashboard has no {key}")
    variables = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
    if variables.get("DS_PROMETHEUS", {}).get("type") != "datasource":
        problems.append("no data source variable DS_PROMETHEUS (type datasource)")
    inst = variables.get("instance")
    if not inst or inst.get("type") != "query":
        problems.append("no query variable instance")
    exprs = []  # (where, expr)
    if inst:
        q = inst.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        exprs.append(("variable instance", q or ""))

    ids, boxes = set(), []
    for p in all_panels(d.get("panels", [])):
        title = p.get("title") or ""
        where = f'panel {p.get("id")} "{title}"'
        if not isinstance(p.get("id"), int):
            problems.append(f"{where}: no integer id")
        elif p["id"] in ids:
            problems.append(f"{where}: id used twice")
        ids.add(p.get("id"))
        g = p.get("gridPos")
        if not isinstance(g, dict) or not all(isinstance(g.get(k), int) for k in "hwxy"):
            problems.append(f"{where}: no gridPos with integer h, w, x, y")
        elif g["w"] < 1 or g["h"] < 1 or g["x"] < 0 or g["y"] < 0 or g["x"] + g["w"] > 24:
            problems.append(f"{where}: gridPos {g} outside the 24-column grid")
        else:
            for other_where, o in boxes:
                if (g["x"] < o["x"] + o["w"] and o["x"] < g["x"] + g["w"]
                        and g["y"] < o["y"] + o["h"] and o["y"] < g["y"] + g["h"]):
                    problems.append(f"{where}: overlaps {other_where}")
            boxes.append((where, g))
        if not title:
            problems.append(f"{where}: no title")
        if p.get("type") == "row":
            if p.get("targets"):
                problems.append(f"{where}: a row with targets")
            continue
        ds = p.get("datasource")
        if not isinstance(ds, dict) or ds.get("uid") != PANEL_DS:
            problems.append(f"{where}: datasource is not {PANEL_DS}: {ds}")
        targets = p.get("targets") or []
        if not targets:
            problems.append(f"{where}: no targets")
        refs = set()
        for t in targets:
            if not (t.get("expr") or "").strip():
                problems.append(f"{where}: a target without expr")
            if not t.get("refId") or t["refId"] in refs:
                problems.append(f"{where}: refId missing or used twice")
            refs.add(t.get("refId"))
            tds = t.get("datasource")
            if tds is not None and (not isinstance(tds, dict) or tds.get("uid") != PANEL_DS):
                problems.append(f"{where}: target {t.get('refId')} datasource is not {PANEL_DS}")
            exprs.append((f"{where} target {t.get('refId')}", t.get("expr") or ""))

    # every expression through promtool's parser: Grafana's variables replaced by values
    subst = [("$__rate_interval", "5m"), ("$__interval", "1m"), ("$__range", "1h"),
             ("${instance}", ".*"), ("$instance", ".*")]
    rules = []
    with open(rules_path, encoding="utf-8") as f:
        rules_text = f.read()
    recorded = set(re.findall(r"^\s*-?\s*record:\s*(\S+)", rules_text, re.M))
    used = {}
    for k, (where, expr) in enumerate(exprs):
        if where == "variable instance":
            m = re.fullmatch(r"\s*label_values\((.*),\s*instance\s*\)\s*", expr)
            if not m:
                problems.append(f"variable instance: expected label_values(METRIC, instance), got {expr!r}")
                continue
            expr = m.group(1)
        for a, b in subst:
            expr = expr.replace(a, b)
        if "$" in expr:
            problems.append(f"{where}: unknown variable in {expr!r}")
        record = "dashboard:" + re.sub(r"[^A-Za-z0-9_]+", "_", where).strip("_")
        rules.append({"record": f"{record}_{k}", "expr": expr,
                      "labels": {"where": where}})
        for n in names_in(expr):
            used.setdefault(n, where)
        for r in recording_names(expr):
            if r not in recorded:
                problems.append(f"{where}: recording rule {r} is not defined in {rules_path}")
    with open(out_rules, "w", encoding="utf-8") as f:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f, indent=1)
    with open(out_names, "w", encoding="utf-8") as f:
        for n, where in sorted(used.items()):
            f.write(f"{n}\t{path}: {where}\n")
    for p in problems:
        print(p)
    print(f"{len(exprs)} expressions in {len(ids)} panels")
    sys.exit(1 if problems else 0)


def rule_names(out_names, *paths):
    """The aidc_* names of rule files (comments left out)."""
    with open(out_names, "w", encoding="utf-8") as out:
        for path in paths:
            with open(path, encoding="utf-8") as f:
                text = strip_comments(f.read())
            for n in sorted(names_in(text)):
                out.write(f"{n}\t{path}\n")


def load_used(paths):
    used = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                n, where = line.rstrip("\n").split("\t", 1)
                used.setdefault(n, []).append(where)
    return used


def family(n, families=None):
    """The family of a sample name: histogram suffixes stripped."""
    for s in HIST_SUFFIXES:
        if n.endswith(s):
            base = n[: -len(s)]
            if families is None or base in families:
                return base, s
    return n, ""


def documented(doc, *used_files):
    """Every used family is named in the operator's document."""
    with open(doc, encoding="utf-8") as f:
        known = names_in(f.read())
    used = load_used(used_files)
    bad = 0
    for n, wheres in sorted(used.items()):
        fam, _ = family(n)
        if fam not in known and n not in known:
            print(f"{fam}: not documented in {doc} (used in {wheres[0]})")
            bad += 1
    print(f"{len(used)} names used, {bad} undocumented")
    sys.exit(1 if bad else 0)


def exposed(metrics_path, doc, *used_files):
    """Every used family has a `# TYPE` line in a real aidcd's /metrics."""
    families = {}
    with open(metrics_path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4 and parts[0] == "#" and parts[1] == "TYPE":
                families[parts[2]] = parts[3]
    used = load_used(used_files)
    missing, wrong = {}, []
    for n, wheres in sorted(used.items()):
        fam, suffix = family(n, families)
        kind = families.get(fam)
        if kind is None:
            fam, suffix = family(n)
            missing.setdefault(fam, set()).update(w.split(":")[0] for w in wheres)
        elif suffix and kind not in ("histogram", "summary"):
            wrong.append(f"{n}: {fam} is a {kind}, not a histogram ({wheres[0]})")
        elif not suffix and kind == "histogram":
            wrong.append(f"{n}: a histogram has no such series, use {n}_bucket, _sum or _count ({wheres[0]})")
    for fam in sorted(missing):
        print(f"missing from /metrics: {fam} (used in {', '.join(sorted(missing[fam]))})")
    for w in wrong:
        print(w)
    with open(doc, encoding="utf-8") as f:
        known = names_in(f.read())
    extra = sorted(set(families) - known)
    if extra:
        print("note: exposed but not in " + doc + ": " + ", ".join(extra))
    print(f"{len(families)} families exposed, {len(used)} names used, "
          f"{len(missing)} missing, {len(wrong)} misused")
    sys.exit(1 if missing or wrong else 0)


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        return {slug(m) for m in re.findall(r"^#+\s+(.*)$", f.read(), re.M)}


def links(rules_path, docs_dir, doc):
    """The rules' runbook_url anchors and quoted doc sections, and the links of the
    operator's document to other docs, lead to headings that exist."""
    with open(rules_path, encoding="utf-8") as f:
        text = " ".join(strip_comments(f.read()).split())
    refs = []  # (where, doc file, anchor)
    for m in re.finditer(r"runbook_url: docs/([\w.-]+\.md)#([\w-]+)", text):
        refs.append((m.group(0), m.group(1), m.group(2)))
    for m in re.finditer(r'docs/([\w.-]+\.md), ("[^"]+"(?:,? and "[^"]+")*)', text):
        for section in re.findall(r'"([^"]+)"', m.group(2)):
            refs.append((f'{m.group(1)}, "{section}"', m.group(1), slug(section)))
    with open(doc, encoding="utf-8") as f:
        for m in re.finditer(r"\]\(([\w.-]+\.md)#([\w-]+)\)", f.read()):
            refs.append((f"{doc}: link {m.group(0)}", m.group(1), m.group(2)))
    bad = 0
    for where, name, anchor in refs:
        try:
            found = anchor in anchors(f"{docs_dir}/{name}")
        except OSError:
            found = False
        if not found:
            print(f"{where}: no heading #{anchor} in docs/{name}")
            bad += 1
    print(f"{len(refs)} references to docs, {bad} broken")
    sys.exit(1 if bad else 0)


def covered(rules_path, tests_path):
    """Every alert of the rules is the subject of a unit test (promtool does not care)."""
    with open(rules_path, encoding="utf-8") as f:
        alerts = set(re.findall(r"^\s*-?\s*alert:\s*(\S+)", f.read(), re.M))
    with open(tests_path, encoding="utf-8") as f:
        tested = set(re.findall(r"^\s*-?\s*alertname:\s*(\S+)", f.read(), re.M))
    for a in sorted(alerts - tested):
        print(f"{a}: no alert_rule_test in {tests_path}")
    for a in sorted(tested - alerts):
        print(f"{a}: tested in {tests_path} but not defined in {rules_path}")
    print(f"{len(alerts)} alerts, {len(alerts & tested)} tested")
    sys.exit(1 if alerts != tested else 0)


if __name__ == "__main__":
    {"dashboard": dashboard, "rule-names": rule_names, "documented": documented,
     "exposed": exposed, "links": links, "covered": covered}[sys.argv[1]](*sys.argv[2:])
PY
check() { python3 "$tmp/check.py" "$@"; }

if out=$(check covered "$prom/aidc-alerts.yml" "$prom/aidc-alerts.test.yml" 2>&1); then
    ok "every alert has a unit test ($(tail -1 <<<"$out"))"
else
    fail "alerts without a unit test:"$'\n'"$out"
fi

if out=$(check dashboard "$dash" "$prom/aidc-alerts.yml" "$tmp/dashboard-rules.json" \
        "$tmp/dashboard-names.tsv" 2>&1); then
    ok "dashboard JSON: panels, data source, variables, targets, grid ($(tail -1 <<<"$out"))"
else
    fail "dashboard JSON:"$'\n'"$out"
fi
if [ -s "$tmp/dashboard-rules.json" ]; then
    if out=$(promtool check rules "$tmp/dashboard-rules.json" 2>&1); then
        ok "every dashboard expression parses as PromQL"
    else
        fail "dashboard expressions that do not parse:"$'\n'"$out"
    fi
fi

check rule-names "$tmp/rule-names.tsv" "$prom/aidc-alerts.yml"
used_files=("$tmp/rule-names.tsv")
[ -f "$tmp/dashboard-names.tsv" ] && used_files+=("$tmp/dashboard-names.tsv")
if out=$(check documented "$doc" "${used_files[@]}" 2>&1); then
    ok "every metric of the rules and the dashboard is documented in docs/observability.md ($(tail -1 <<<"$out"))"
else
    fail "metrics not documented in docs/observability.md:"$'\n'"$out"
fi

if out=$(check links "$prom/aidc-alerts.yml" docs "$doc" 2>&1); then
    ok "the rules' runbook links and doc sections exist ($(tail -1 <<<"$out"))"
else
    fail "broken references to docs:"$'\n'"$out"
fi

# ---- 4. a real aidcd's /metrics -------------------------------------------------------
summary() { echo "observability: $passes passed, $failures failed"; }

if [ -z "${AIDC_TEST_APP_URL:-}" ] || [ -z "${AIDC_TEST_OWNER_URL:-}" ]; then
    summary
    [ "$failures" -eq 0 ] || exit 1
    echo "skipped: the /metrics comparison needs AIDC_TEST_APP_URL/AIDC_TEST_OWNER_URL (tests/run.sh)"
    exit 77
fi
if [ ! -x "$bin" ]; then
    fail "AIDC_BIN: $bin is not an executable aidcd"
    summary
    exit 1
fi
for tool in psql curl; do
    if ! command -v $tool >/dev/null; then
        fail "$tool not found (deploy/install-deps.sh run test)"
        summary
        exit 1
    fi
done

# the same URL naming another database (everything after the last '/', query kept)
url_with_db() {
    local url=$1 db=$2 q=
    case "$url" in *\?*) q="?${url#*\?}"; url=${url%%\?*} ;; esac
    echo "${url%/*}/$db$q"
}
sql() { psql -X -q -v ON_ERROR_STOP=1 -At -d "$1" -c "$2"; }

name=aidc_t_observability_$$
owner_role=$(sql "$AIDC_TEST_OWNER_URL" "SELECT current_user") || {
    fail "cannot connect as the owner role ($AIDC_TEST_OWNER_URL)"; summary; exit 1; }
if [ -n "${AIDC_TEST_SUPERUSER_URL:-}" ]; then
    db_admin_url=$AIDC_TEST_SUPERUSER_URL
    create="CREATE DATABASE $name OWNER \"$owner_role\""
else
    db_admin_url=$AIDC_TEST_OWNER_URL
    create="CREATE DATABASE $name"
fi
if ! out=$(sql "$db_admin_url" "$create" 2>&1); then
    fail "cannot create database $name: $out"; summary; exit 1
fi
dbname=$name

run_env=(env -u AIDC_CONFIG_FILE
    AIDC_DATABASE_URL="$(url_with_db "$AIDC_TEST_APP_URL" "$name")"
    AIDC_MIGRATE_DATABASE_URL="$(url_with_db "$AIDC_TEST_OWNER_URL" "$name")"
    AIDC_DATA_DIR="$tmp/data" AIDC_JWT_KEY_FILE="$tmp/data/jwt.key"
    AIDC_PORTAL_DIR="$src/portal" AIDC_LISTEN=127.0.0.1:0 AIDC_THREADS=2 AIDC_WORKERS=1
    AIDC_LOG_LEVEL=info)
mkdir -m 700 "$tmp/data"
password=obs-$$-$RANDOM$RANDOM
if ! "${run_env[@]}" "$bin" migrate >"$tmp/migrate.log" 2>&1; then
    fail "aidcd migrate failed: $(tail -5 "$tmp/migrate.log")"; summary; exit 1
fi
if ! "${run_env[@]}" AIDC_ADMIN_PASSWORD="$password" "$bin" bootstrap --admin obsadmin \
        >"$tmp/bootstrap.log" 2>&1; then
    fail "aidcd bootstrap failed: $(tail -5 "$tmp/bootstrap.log")"; summary; exit 1
fi

"${run_env[@]}" "$bin" serve >"$tmp/aidcd.log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 600); do   # the "listening" log line names the port aidcd picked
    port=$(sed -n 's/.*"msg":"listening".*"port":\([0-9]*\).*/\1/p' "$tmp/aidcd.log" | head -1)
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
done
if [ -z "$port" ]; then
    fail "aidcd serve did not start listening: $(tail -5 "$tmp/aidcd.log")"; summary; exit 1
fi
base=http://127.0.0.1:$port
ready=
for _ in $(seq 300); do
    if curl -fsS --max-time 2 -o /dev/null "$base/readyz" 2>/dev/null; then ready=1; break; fi
    sleep 0.1
done
if [ -z "$ready" ]; then
    fail "aidcd never answered /readyz 200: $(tail -5 "$tmp/aidcd.log")"; summary; exit 1
fi

# A local cluster with GPUs, so the per-cluster and per-GPU-type families have series.
token=$(curl -fsS --max-time 10 -H 'Content-Type: application/json' \
    -d "{\"username\":\"obsadmin\",\"password\":\"$password\"}" "$base/api/v1/auth/login" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])') || token=
code=
if [ -n "$token" ]; then
    code=$(curl -sS --max-time 10 -o "$tmp/cluster.json" -w '%{http_code}' \
        -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        -d '{"name":"obs","kind":"local","options":{"gpus":{"a100":2},"cpus":2,"memory_gib":4}}' \
        "$base/api/v1/clusters")
fi
if [ "$code" = 201 ]; then
    ok "a local cluster registered through the API"
else
    fail "cannot register a local cluster (login or POST /api/v1/clusters answered ${code:-nothing}): $(cat "$tmp/cluster.json" 2>/dev/null)"
fi

# Compare once the workers have had their first rounds: every worker led (one
# replica) and the syncer's inventory of the new cluster visible; 30 s at most.
settled=
for _ in $(seq 60); do
    curl -fsS --max-time 10 "$base/metrics" >"$tmp/metrics.txt" 2>"$tmp/metrics.err" || true
    if grep -q '^aidc_gpus_total{gpu_type="a100"} ' "$tmp/metrics.txt" &&
        ! grep -q '^aidc_worker_leader{.*} 0$' "$tmp/metrics.txt"; then
        settled=1
        break
    fi
    sleep 0.5
done
[ -n "$settled" ] || echo "note: after 30 s, /metrics still lacks the cluster's GPUs or a worker's leader"
if [ ! -s "$tmp/metrics.txt" ]; then
    fail "GET /metrics answered nothing: $(cat "$tmp/metrics.err")"
elif check exposed "$tmp/metrics.txt" "$doc" "${used_files[@]}" >"$tmp/exposed.out" 2>&1; then
    ok "every metric of the rules and the dashboard is a family aidcd exposes ($(tail -1 "$tmp/exposed.out"))"
    grep '^note:' "$tmp/exposed.out"
else
    fail "metrics the rules or the dashboard use but aidcd does not expose:"$'\n'"$(cat "$tmp/exposed.out")"
fi

kill -TERM "$server_pid"
wait "$server_pid"
st=$?
server_pid=
if [ "$st" -eq 0 ]; then
    ok "aidcd stopped cleanly on SIGTERM"
else
    fail "aidcd exited with $st on SIGTERM: $(tail -5 "$tmp/aidcd.log")"
fi

summary
[ "$failures" -eq 0 ]
