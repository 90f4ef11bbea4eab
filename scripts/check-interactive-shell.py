#!/usr/bin/env python3
"""The head-unit shell at a terminal: runs `iapctl head-unit` on a pseudo-
terminal, types as a person would (tab completion, arrow keys, history,
Ctrl-U, Ctrl-C, Ctrl-D) and checks what the terminal shows: log lines and
results above the prompt, the line being typed redrawn under them; then a
head unit whose phone (another process) dies while a line is being typed.
Exits 1 naming the first check that failed.
Usage: scripts/check-interactive-shell.py [path/to/iapctl]"""
import os, pty, select, signal, socket, subprocess, sys, tempfile, time

iapctl = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".build", "debug", "iapctl")
home = tempfile.mkdtemp()

def start(*arguments):
    """iapctl with these arguments on a new pseudo-terminal (logs at info: they go above the prompt too)."""
    global pid, fd, screen
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update(HOME=home, XDG_STATE_HOME=os.path.join(home, "state"))
        os.execv(iapctl, [iapctl, "head-unit", *arguments])
    screen = b""

def wait_exit(seconds):
    """The exit status, or None if the program still runs after `seconds`."""
    end = time.time() + seconds
    while time.time() < end:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done == pid:
            return os.waitstatus_to_exitcode(status)
        read_for(0.05)
    return None

start()
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
check("log lines never land after the prompt", b"head-unit> [" not in screen and b"phone: head unit limits" in screen)
mark = len(screen)
type_keys(b"pl\t")
check("tab completes a command (pl -> play)", b"ay " in screen[mark:])
type_keys(b"\x15cd 1\x1b[D\x1b[C\r", 1.0)                # Ctrl-U, then arrows inside the line
check("arrow keys move in the line, never typed as text", b"library: 4 of 4 rows" in screen and b"^[[" not in screen and b"no row" not in screen)
check("the command ran", b"library: 4 of 4 rows" in screen)
check("a typed command is not echoed again as a line of output", b"head-unit: > cd 1" not in screen)
type_keys(b"np\r")
mark = len(screen)
type_keys(b"\x1b[A\x1b[A")                                 # up twice: back to "cd 1"
check("up arrow recalls earlier lines", b"cd 1" in screen[mark:])
type_keys(b"\x15rep\t")
mark = len(screen)
type_keys(b"a\t")
check("tab completes a command's words (repeat a -> all)", b"ll" in screen[mark:])
mark = len(screen)
type_keys(b"\x15press play-pause\rnp", 1.0)                # the phone logs the press while "np" is being typed
after = screen[mark:]
logged = after.find(b"phone: HID play/pause pressed")
check("a log line is written above the prompt", logged > 0 and after.rfind(b"\r\x1b[K", 0, logged) > after.rfind(b"head-unit> ", 0, logged))
check("the line being typed is drawn again under it", logged > 0 and b"head-unit> np" in after[logged:])
mark = len(screen)
type_keys(b"\x03", 0.5)                                   # Ctrl-C mid-line
type_keys(b"\r", 0.5)
check("Ctrl-C mid-line cancels the line, not the program", wait_exit(0.1) is None and b"^C" in screen[mark:] and b"now playing:" not in screen[mark:])
mark = len(screen)
type_keys(b"\x03", 0.5)                                   # Ctrl-C at an empty prompt
check("Ctrl-C at an empty prompt gives a new prompt", wait_exit(0.1) is None and b"head-unit> " in screen[mark:])
type_keys(b"watch 60\r", 1.5)
mark = len(screen)
type_keys(b"\x03", 0.5)                                   # Ctrl-C during a watch
type_keys(b"np\r", 0.5)
check("Ctrl-C stops a watch; the next line runs at once", b"watch stopped" in screen[mark:] and b"now playing:" in screen[mark:] and wait_exit(0.1) is None)
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
    os.kill(pid, signal.SIGKILL)
history = os.path.join(home, "state", "iap-devkit", "head-unit-history")
check("history is kept for the next run", os.path.exists(history) and "quit" in open(history).read())

# Ctrl-D at an empty prompt ends the input, and the program.
start("--quiet")
read_for(3)
type_keys(b"\x04", 0.2)
status = wait_exit(10)
check(f"Ctrl-D ends the shell (status {status})", status == 0)

# The phone (another process) dies while a line is being typed: the head
# unit says what happened, keeps the line in its history and exits 1.
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1]
probe.close()
phone = subprocess.Popen([iapctl, "phone", "--transport", f"tcp-listen:127.0.0.1:{port}"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
phone.stderr.readline()                                   # "listening on ..."
start("--transport", f"tcp:127.0.0.1:{port}")
read_for(3)
type_keys(b"cd 2", 0.3)
phone.kill()
phone.wait()
status = wait_exit(10)
check(f"the head unit ends with status 1 when its phone dies (status {status})", status == 1)
check("it says the connection ended and names the line being typed", b"before the shell's input did; not run: 'cd 2'" in screen)
check("the line being typed is kept in the history", "cd\\0402" in open(history).read().splitlines())   # libedit writes a space as \\040
if failures:
    sys.stdout.write("\nterminal:\n" + screen.decode("utf-8", "replace")[-3000:] + "\n")
    sys.exit(1)
