#!/usr/bin/env bash
# The template of `trevo task new` can evolve memory: NAME.ini names the
# structural mutation keys in its comments, add_recurrent_rate among them,
# sets add_recurrent_rate above 0, and every key it sets or names is a key
# of `trevo run --help-config` (tests/it_plugin.sh builds and runs it).
set -u
. "$(dirname "$0")/lib_it.sh"
it_tmpdir it_template
cd "$dir"

"$TREVO" task new memo >/dev/null || fail "task new exited $?"
ini=memo/memo.ini
keys=$("$TREVO" run --help-config | sed -n 's/^;\{0,1\}\( required: \)\{0,1\}\([a-z_0-9]*\) = .*/\2/p')
for k in add_local_rate add_skip_rate add_recurrent_rate add_neuron_rate del_conn_rate del_neuron_rate; do
    grep -q "^;.*\b$k\b" "$ini" || fail "$ini's comments do not name $k"
    printf '%s\n' "$keys" | grep -qx "$k" || fail "$k is not a config key"
done
rate=$(sed -n 's/^add_recurrent_rate = //p' "$ini")
[ -n "$rate" ] && awk -v r="$rate" 'BEGIN { exit !(r > 0) }' || fail "add_recurrent_rate is '$rate'"
for k in $(sed -n 's/^\([a-z_0-9]*\) = .*/\1/p' "$ini"); do
    [ "$k" = bits ] || printf '%s\n' "$keys" | grep -qx "$k" || fail "$ini sets unknown key $k"
done
echo "ok: the template names the structural mutations and evolves recurrence"
