# aidc-hook.sh - record every command of an interactive bash or zsh with
# `aidc-agent record` (docs/agent.md). Install as /etc/profile.d/aidc-hook.sh
# (bash: sourced by login shells, and from /etc/bash.bashrc for the others)
# and source it from /etc/zsh/zshrc.
#
# Quick and silent: the agent runs in the background with no output, so the
# prompt never waits for it; when the agent is missing nothing is hooked; the
# exit status a command left ($?) is kept for the user's own prompt. Sourced
# by sh, dash or a non-interactive shell, it does nothing.
#
# A record holds the command line as typed, its exit status, the directory it
# was started in, its start time and the session: "ses:N/pid:P" (N the audit
# session, as in auditd's records, when there is one) or "pid:P".

[ -n "${BASH_VERSION-}${ZSH_VERSION-}" ] || return 0
case $- in *i*) ;; *) return 0 ;; esac
[ -z "${__aidc_hooked-}" ] || return 0
__aidc_bin=${AIDC_AGENT_BIN:-/usr/local/bin/aidc-agent}
[ -x "$__aidc_bin" ] || return 0
__aidc_hooked=1

__aidc_session="pid:$$"
if [ -r /proc/self/sessionid ] && read -r __aidc_ses </proc/self/sessionid 2>/dev/null &&
    [ -n "$__aidc_ses" ] && [ "$__aidc_ses" != 4294967295 ]; then
    __aidc_session="ses:$__aidc_ses/pid:$$"
fi
unset __aidc_ses

# __aidc_send EXIT CWD MS TEXT: one record, in the background, silently
__aidc_send() {
    ("$__aidc_bin" record --exit "$1" --cwd "$2" --time "$3" --session "$__aidc_session" \
        -- "$4" </dev/null >/dev/null 2>&1 &)
}

if [ -n "${ZSH_VERSION-}" ]; then
    # zsh hands preexec the line as typed, whatever the history options say
    zmodload -F zsh/datetime p:EPOCHREALTIME 2>/dev/null
    __aidc_zpreexec() {
        __aidc_cmd=${1#"${1%%[![:space:]]*}"}
        __aidc_cwd=$PWD
        __aidc_t0=
        if [ -n "${EPOCHREALTIME-}" ]; then
            __aidc_f=${EPOCHREALTIME#*[.,]}000
            __aidc_t0=${EPOCHREALTIME%[.,]*}${__aidc_f:0:3}
        fi
    }
    __aidc_zprecmd() {
        local __aidc_ec=$?
        if [ -n "${__aidc_cmd-}" ]; then
            __aidc_send "$__aidc_ec" "${__aidc_cwd-$PWD}" "${__aidc_t0-}" "$__aidc_cmd"
            __aidc_cmd=
        fi
        return $__aidc_ec
    }
    typeset -ga preexec_functions precmd_functions # (declared, even under nounset)
    preexec_functions=(__aidc_zpreexec $preexec_functions)
    precmd_functions=(__aidc_zprecmd $precmd_functions)
    return 0
fi

# bash (4.4 or later: PS0). PS0 is expanded once for each command line the
# shell is about to run (not for an empty one); its expansions, which print
# nothing, note that a line runs, its start time and the directory it starts
# in. PROMPT_COMMAND then records it: the line from the history, or, when it
# did not enter the history (HISTCONTROL=ignorespace, HISTIGNORE), the first
# command of it as the DEBUG trap saw it.
[ "${BASH_VERSINFO[0]}" -gt 4 ] || { [ "${BASH_VERSINFO[0]}" -eq 4 ] && [ "${BASH_VERSINFO[1]}" -ge 4 ]; } ||
    return 0
declare -A __aidc_sink=()
__aidc_x=x
__aidc_ran=0
__aidc_histno=
if [ -n "${EPOCHREALTIME-}" ]; then
    PS0='${__aidc_sink[${__aidc_cwd:=$PWD}]-}${__aidc_x:$((__aidc_ran=1, __aidc_t0=${EPOCHREALTIME/[.,]/}/1000)):0}'"${PS0-}"
else
    PS0='${__aidc_sink[${__aidc_cwd:=$PWD}]-}${__aidc_x:$((__aidc_ran=1)):0}'"${PS0-}"
fi

__aidc_prompt() {
    local __aidc_ec=$? __aidc_h __aidc_no __aidc_cmd
    if ((__aidc_ran)); then
        __aidc_h=$(HISTTIMEFORMAT= builtin history 1 2>/dev/null)
        __aidc_h=${__aidc_h#"${__aidc_h%%[![:space:]]*}"}
        __aidc_no=${__aidc_h%%[!0-9]*}
        __aidc_cmd=${__aidc_h#"$__aidc_no"}
        __aidc_cmd=${__aidc_cmd#\*}
        __aidc_cmd=${__aidc_cmd#  }
        if [ "$__aidc_no" = "$__aidc_histno" ] || [ -z "$__aidc_no" ]; then
            # not a new history entry: the same line again (ignoredups) or one
            # kept out of the history
            if ((__aidc_ran == 2)) && [[ $__aidc_cmd != *"$__aidc_first"* ]]; then
                __aidc_cmd=$__aidc_first
            fi
        fi
        __aidc_histno=$__aidc_no
        [ -z "$__aidc_cmd" ] ||
            __aidc_send "$__aidc_ec" "${__aidc_cwd:-$PWD}" "${__aidc_t0-}" "$__aidc_cmd"
    fi
    __aidc_ran=0
    __aidc_cwd=
    __aidc_t0=
    return $__aidc_ec
}

__aidc_histno=$(HISTTIMEFORMAT= builtin history 1 2>/dev/null)
__aidc_histno=${__aidc_histno#"${__aidc_histno%%[![:space:]]*}"}
__aidc_histno=${__aidc_histno%%[!0-9]*}
# first, so that $? is still the command's (and is passed on unchanged)
PROMPT_COMMAND="__aidc_prompt${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
# the DEBUG trap is someone else's when set already: then no fallback text
if [ -z "$(trap -p DEBUG)" ]; then
    trap '((__aidc_ran != 1)) || { __aidc_ran=2; __aidc_first=$BASH_COMMAND; }' DEBUG
fi
