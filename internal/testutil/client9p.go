package testutil

// Attack9P is a minimal 9P client in python, the attacker's own code
// rather than ours, run as `python3 -c Attack9P SOCKET [wait]`: with
// wait it first reads a line on stdin (so that a test can register its
// process group as a stage). It prints TRIED connect, then "refused"
// and exits 0 if it cannot connect; else it attaches on behalf of pid 1,
// opens a/default.json for writing and help for reading, printing "ok"
// or "error: TEXT" for each.
const Attack9P = `import os, socket, struct, sys
if len(sys.argv) > 2 and sys.argv[2] == "wait":
    sys.stdin.readline()
def msg(t, tag, body): return struct.pack("<IBH", 7 + len(body), t, tag) + body
def s9(x): x = x.encode(); return struct.pack("<H", len(x)) + x
def rpc(c, t, body):
    c.sendall(msg(t, 1, body))
    n = struct.unpack("<I", c.recv(4))[0]
    b = b""
    while len(b) < n - 4: b += c.recv(n - 4 - len(b))
    if b[0] == 107: return "error: " + b[5:5 + struct.unpack("<H", b[3:5])[0]].decode()
    return "ok"
print("TRIED connect", end=" ")
try:
    c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])
except OSError as e:
    print("refused", e); sys.exit(0)
print("connected")
print("version", rpc(c, 100, struct.pack("<I", 8192) + s9("9P2000")))
print("TRIED attach-as-pid", rpc(c, 104, struct.pack("<II", 1, 0xffffffff) + s9("x") + s9("pid=1")))
print("attach", rpc(c, 104, struct.pack("<II", 2, 0xffffffff) + s9("x") + s9("")))
print("walk", rpc(c, 110, struct.pack("<IIH", 2, 3, 2) + s9("a") + s9("default.json")))
print("TRIED open-agent", rpc(c, 112, struct.pack("<IB", 3, 1)))
print("walk2", rpc(c, 110, struct.pack("<IIH", 2, 4, 1) + s9("help")))
print("open-help", rpc(c, 112, struct.pack("<IB", 4, 0)))
`
