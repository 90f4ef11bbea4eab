#!/usr/bin/env python3
"""The head-unit shell at a terminal: runs `iapctl head-unit` on a pseudo-
terminal, types as a person would (tab completion, arrow keys, history,
Ctrl-U) and checks what the terminal shows. Exits 1 naming the first check
that failed. Usage: scripts/check-interactive-shell.py [path/to/iapctl]"""
import os, pty, select, sys, tempfile, time

iapctl = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".build", "debug", "iapctl")
home = tempfile.mkdtemp()
pid, fd = pty.fork()
if pid == 0:
    os.environ.update(HOME=home, XDG_STATE_HOME=os.path.join(home, "state"))
    os.execv(iapctl, [iapctl, "head-unit", "--quiet"])

screen = b""
def read_for(seconds):
    global screen
    end = time.time() + seconds
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                screen += os.read(fd, 65536)
            except OSError:
                return

def type_keys(keys, wait=0.5):
    os.write(fd, keys)
    read_for(wait)

failures = []
def check(what, condition):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)

read_for(3)
check("the prompt is shown", b"head-unit> " in screen)
check("the phone's tabs arrive above the prompt", b"tabs: Library" in screen)
mark = len(screen)
type_keys(b"pl\t")
check("tab completes a command (pl -> play)", b"ay " in screen[mark:])
type_keys(b"\x15cd 1\x1b[D\x1b[C\r", 1.0)                # Ctrl-U, then arrows inside the line
check("arrow keys move in the line, never typed as text", b"> cd 1\r\n" in screen and b"^[[" not in screen)
check("the command ran", b"library: 4 of 4 rows" in screen)
type_keys(b"np\r")
mark = len(screen)
type_keys(b"\x1b[A\x1b[A")                                 # up twice: back to "cd 1"
check("up arrow recalls earlier lines", b"cd 1" in screen[mark:])
type_keys(b"\x15rep\t")
mark = len(screen)
type_keys(b"a\t")
check("tab completes a command's words (repeat a -> all)", b"ll" in screen[mark:])
type_keys(b"\x15quit\r", 0.2)
done, quit_at = 0, time.time()
while time.time() - quit_at < 10 and done != pid:
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        done = pid
    read_for(0.05)
check(f"quit ends the program ({time.time() - quit_at:.1f} s)", done == pid and time.time() - quit_at < 5)
if done != pid:
    os.kill(pid, 9)
history = os.path.join(home, "state", "iap-devkit", "head-unit-history")
check("history is kept for the next run", os.path.exists(history) and "quit" in open(history).read())
if failures:
    sys.stdout.write("\nterminal:\n" + screen.decode("utf-8", "replace")[-3000:] + "\n")
    sys.exit(1)
