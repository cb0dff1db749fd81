"""The floor of creating the script's process with posix_spawn (glibc: clone
with CLONE_VM|CLONE_VFORK, no page tables copied), in its own process group,
reading its stdout: what a small helper process would pay per run.
Usage: python3 posix-spawn.py <script> <calls>. Prints one JSON line."""
import json, os, resource, sys, time

script, calls = sys.argv[1], int(sys.argv[2])

def cpu_ms():
    own, ended = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime) * 1000

before, started = cpu_ms(), time.monotonic()
for _ in range(calls):
    read_end, write_end = os.pipe()
    pid = os.posix_spawn(script, [script], {'PATH': '/usr/bin:/bin'}, setpgroup=0,
                         file_actions=[(os.POSIX_SPAWN_DUP2, write_end, 1), (os.POSIX_SPAWN_CLOSE, read_end)])
    os.close(write_end)
    while os.read(read_end, 65536):
        pass
    os.close(read_end)
    os.waitpid(pid, 0)
seconds = time.monotonic() - started
print(json.dumps({'perSecond': calls / seconds, 'cpuMsPerCall': (cpu_ms() - before) / calls}))
