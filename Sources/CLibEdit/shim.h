// libedit's readline interface (BSD licence), for the head-unit shell's
// line editing, history and completion. <stdio.h> first: the header uses FILE.
#include <stdio.h>
#include <editline/readline.h>

// Swift sees libedit's global variables as shared mutable state; the shell
// sets and reads them through these, on the line editor's thread only.
static inline void iapctl_rl_configure(const char *name, rl_completion_func_t *completion) {
    rl_readline_name = name;
    rl_attempted_completion_function = completion;
    // The shell handles Ctrl-C itself (LineEditor): libedit's own handler
    // would put the terminal in cooked mode and re-raise the signal.
    rl_catch_signals = 0;
}
static inline void iapctl_rl_no_default_completion(void) { rl_attempted_completion_over = 1; }
static inline const char *iapctl_rl_line_buffer(void) { return rl_line_buffer; }
