#!/bin/sh
# SPDX-License-Identifier: MIT
# The operator CLI against the real engine: doctor is green, exec returns the
# command's output and exit status, listings parse as JSON, usage errors exit
# 2, every command has --help, and destroy/gc leave no container behind.
set -u
bin=${top_builddir:-.}/yuxi-sandbox
tag=yxcli$$
export YUXI_SAVES_DIR=$(mktemp -d /tmp/yxcli.XXXXXX)
export YUXI_SHM_NAME=/$tag YUXI_SANDBOX_CONTAINER_PREFIX=$tag- YUXI_SANDBOX_IMAGE=yuxi-sandbox-test:latest
fails=0 n=0
cleanup() {
	ids=$(docker ps -aq --filter "name=$tag-")
	[ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1
	rm -rf "$YUXI_SAVES_DIR" "/dev/shm/$tag"
}
trap cleanup EXIT
check() { # check NAME EXPECTED ACTUAL
	n=$((n + 1))
	if [ "$2" = "$3" ]; then echo "ok $n - $1"; else echo "not ok $n - $1: expected [$2] got [$3]"; fails=$((fails + 1)); fi
}

"$bin" doctor >/tmp/$tag.out 2>&1; check "doctor without a service fails" 1 $?
check "doctor names the table, the only failed check" "1 1" \
    "$(grep -c FAIL /tmp/$tag.out) $(grep -c 'FAIL.*table' /tmp/$tag.out)"
# an unknown thread is refused and leaves nothing behind (no ownerless
# thread directory that the API could neither show nor delete)
"$bin" exec c1 -- echo hello 2>/tmp/$tag.err; check "unknown thread refused" 1 $?
check "refusal says why" 1 "$(grep -c -- '--owner' /tmp/$tag.err)"
check "no ownerless thread directory" "" "$(ls "$YUXI_SAVES_DIR/threads" 2>/dev/null)"
out=$("$bin" exec --owner alice c1 -- echo hello world); check "exec output" "hello world" "$out"
check "thread created for its owner" alice "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["owner"])' "$YUXI_SAVES_DIR/threads/c1/thread.json")"
"$bin" exec c1 --owner bob -- true 2>/dev/null; check "another owner refused" 1 $?
"$bin" exec c1 -- sh -c 'exit 7'; check "exec exit status" 7 $?
out=$("$bin" exec c1 'echo a && echo b | tr b c'); check "exec shell line" "a
c" "$out"
out=$("$bin" exec c1 -- printf '%s' "it's quoted"); check "exec quoting" "it's quoted" "$out"
"$bin" exec c1 -- cat /etc/passwd >/dev/null 2>&1; check "policy refusal exit 126" 126 $?
out=$("$bin" list --json | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d), d[0]["thread_id"], d[0]["state"])')
# without a service each command's table is its own: it adopts the running
# sandboxes of the instance (warm until a command uses them)
check "list --json (adopted)" "1 c1 warm" "$out"
"$bin" release c1 >/dev/null; check "release" 0 $?
out=$("$bin" list --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["state"])')
check "released is warm" warm "$out"
"$bin" destroy c1 >/dev/null; check "destroy" 0 $?
check "no container left" "" "$(docker ps -aq --filter "name=$tag-")"
"$bin" destroy nosuch 2>/dev/null; check "destroy unknown exits 1" 1 $?
"$bin" bogus 2>/dev/null; check "unknown command exits 2" 2 $?
"$bin" exec 2>/dev/null; check "missing thread exits 2" 2 $?
"$bin" exec '../x' -- true 2>/dev/null; check "invalid thread id exits 2" 2 $?
for c in doctor list acquire exec release destroy gc; do
	"$bin" $c --help | grep -q "usage: yuxi-sandbox $c"; check "$c --help" 0 $?
done
YUXI_SANDBOX_MEMORY=lots "$bin" list 2>/tmp/$tag.err; check "bad config exits 2" 2 $?
check "bad config names the variable" 1 "$(grep -c YUXI_SANDBOX_MEMORY /tmp/$tag.err)"
"$bin" gc >/dev/null; check "gc" 0 $?
rm -f /tmp/$tag.out /tmp/$tag.err
echo "$((n - fails)) passed, $fails failed"
[ $fails -eq 0 ]
