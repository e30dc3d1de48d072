# Start-up file of lmc's shell kernel (bash --rcfile). Read bash_session.py first.
#
# Channels, all private to the kernel and never mixed into the user's output:
#   fd 241, 242  the user's stdout and stderr pipes (each block runs with 1>&241 2>&242)
#   fd 243       control, bash -> kernel, one line each:
#                  S           the block's command line was read and starts now
#                  L<n>        line <n> of the block is about to run
#                  D<status>   back at the prompt; <status> is the block's $?
#   fd 244       acknowledgements, kernel -> bash, one byte per L while in lockstep:
#                  "s" stay in lockstep, "\n" report without waiting from now on
# The shell's own fds 1 and 2 go to /dev/null: job-control warnings and the newline bash
# prints after an interrupt are not the user's output.

exec 241>&1 242>&2 243>&"$LMC_CTL_FD" 244<&"$LMC_ACK_FD"
exec {LMC_CTL_FD}>&- {LMC_ACK_FD}<&- 1>/dev/null 2>/dev/null
__lmc_dir=$LMC_BLOCK_DIR __lmc_state=${LMC_STATE_DUMP-}
unset LMC_CTL_FD LMC_ACK_FD LMC_BLOCK_DIR LMC_STATE_DUMP
# The block files' directory goes with the shell, even when the kernel was killed outright.
trap 'rm -rf -- "$__lmc_dir"' EXIT

set +o history +H
shopt -u expand_aliases
PS1='' PS2='' PS0='' PS4='+ '
unset MAILCHECK HISTFILE

__lmc_file=- __lmc_line= __lmc_sync= __lmc_last=

# Functions, command substitutions and subshells inherit the DEBUG trap (and `.` needs it to
# run the trap at all); reports come only from the main shell and the running block's file.
# bash keeps $? across a trap but not $_, so the trap saves it and ends on a command whose
# last argument is the saved value.
#
# Interrupts. bash's own SIGINT handling abandons the block by jumping to the top level, but
# when the signal lands while a trap runs (and a busy loop spends most of its time in the
# DEBUG trap) the jump ends only the trap and the loop goes on: about one interrupt in seven
# was lost that way. A trapped signal is never lost (bash runs the INT trap once the DEBUG
# trap is over), so SIGINT only sets __lmc_intr, and the DEBUG trap, before the next command,
# returns 2: with extdebug that makes bash `return` from the function or sourced file it is
# in, so the block unwinds level by level back to the prompt with the shell's state intact.
# Foreground children still get SIGINT (the kernel signals the whole process group) and
# a `wait` returns at once. PROMPT_COMMAND reports an interrupted block as status 130.
set -T
shopt -s extdebug
__lmc_intr=
trap '__lmc_intr=1' INT
# SIGUSR1 comes from the kernel when it escalates an interrupt to SIGTERM/SIGKILL of the block's
# programs (a vim, a `trap '' INT`): bash discards a SIGINT that came while it waited for a child
# that did not die of SIGINT itself, so without this the rest of the block would run on. A
# trapped USR1 is kept and runs once the child is gone.
trap '__lmc_intr=1' USR1
trap '__lmc_last=$_; [[ -z $__lmc_intr ]] || builtin return 2; [[ $BASH_SUBSHELL == 0 && ${BASH_SOURCE[0]-} == "$__lmc_file" && $LINENO != "$__lmc_line" ]] && { __lmc_line=$LINENO; builtin echo "L$LINENO" >&243; [[ -z $__lmc_sync ]] || builtin read -r -n 1 -u 244 __lmc_sync || __lmc_sync=; }; : "$__lmc_last"' DEBUG

# Kernel state (shell_state.py): after each block, $PWD and every exported NAME=VALUE,
# NUL-separated, into the kernel's dump file; builtins only (compgen into a file, then
# mapfile), so it costs no fork.
__lmc_save_state() {
    local IFS=$' \t\n' __lmc_n
    local -a __lmc_names
    builtin compgen -e >"$__lmc_state.names" 2>/dev/null || builtin return 0
    builtin mapfile -t __lmc_names <"$__lmc_state.names"
    {
        builtin printf '%s\0' "$PWD"
        for __lmc_n in "${__lmc_names[@]}"; do
            builtin printf '%s=%s\0' "$__lmc_n" "${!__lmc_n-}"
        done
    } >"$__lmc_state" 2>/dev/null
}

declare -r PROMPT_COMMAND='__lmc_status=$?; [[ -z $__lmc_intr ]] || __lmc_status=130; __lmc_intr=; [[ -z $__lmc_state ]] || __lmc_save_state; builtin echo "D$__lmc_status" >&243'

# Keyboard input. A block's stdin is /dev/null, so `read` gets end-of-input at once instead of
# waiting for a person; this says so (as lmc says for Python's input()), once the builtin has
# failed on a stdin that is /dev/null (not a file or a pipe the code gave it, not `-u FD`).
read() {
    builtin read "$@"
    local __lmc_status=$?
    if (( __lmc_status != 0 )) && [[ " $* " != *" -u"* && /dev/stdin -ef /dev/null ]]; then
        builtin echo "lmc: this code asked for keyboard input (read), which lmc cannot give it, so it got end of input; put the values in the code instead (answer=y, or pipe them in: echo y | ...)." >&2
    fi
    return $__lmc_status
}
