# Print the engine's view of every XQueue of a device of a hung process, for hang hunts
# (a debug build; gdb -p PID -batch -ex "source scripts/gdb_xqueues.py").
#
# It looks through the threads for a frame of the engine that has an XQueue in a variable
# named `xq` (a wait, a destroy) and walks that XQueue's device's list of queues: per queue
# its priority, level, suspensions (application, scheduler), limited and sole-top flags,
# the numbers submitted / enqueued / committed / completed and the done marks, lenders
# (priority inheritance), and the head pending command (with the record an event wait
# waits for). Reads only; the process goes on after gdb detaches.
import gdb

FRAMES = ("xs_engine_destroy", "xs_engine_wait", "xs_engine_wait_all", "xs__wait_device")


def field(x, name):
    return int(x[name])


def show(x):
    lenders = int(x["lenders"]["next"]) != int(x["lenders"].address)
    pending = int(x["pending"]["next"]) != int(x["pending"].address)
    print("xq %s hwq %s prio %d level %d app=%d sched=%d running=%d closing=%d "
          "limited=%d sole=%d blocked=%d waiting=%d scopes=%d top=%d launching=%d "
          "submitted=%d enqueued=%d committed=%d (max %d) completed=%d marked=%d "
          "mark_want=%d gate_after=%d lenders=%s pending=%s" % (
              x.address, x["hwq"], field(x, "prio"), field(x, "level"),
              field(x, "app_suspended"), field(x, "sched_suspended"), field(x, "running"),
              field(x, "closing"), field(x, "limited"), field(x, "sole_top"),
              field(x, "blocked"), field(x, "waiting"), field(x, "scopes"),
              field(x, "top_busy"), field(x, "launching"), field(x, "submitted"),
              field(x, "enqueued"), field(x, "committed"), field(x, "committed_max"),
              field(x, "completed"), field(x, "marked"), field(x, "mark_want"),
              field(x, "gate_after"), lenders, pending))
    if pending:
        c = gdb.parse_and_eval("(xs_cmd *)((char *)%d - (unsigned long)&((xs_cmd *)0)->link)"
                               % int(x["pending"]["next"]))
        print("   head pending: kind %s seq %s" % (c["kind"], c["seq"]))
        if str(c["kind"]) == "XS_CMD_EVENT_WAIT":
            r = c["u"]["wait"]["record"]
            print("   waits for the record seq %s state %s dep %s of xq %s" % (
                r["seq"], r["state"], r["u"]["record"]["dep"], r["xq"]))
    if lenders:
        link = x["lenders"]["next"]
        while int(link) != int(x["lenders"].address):
            lend = gdb.parse_and_eval("(xs_lend *)%d" % int(link))
            print("   lent to by xq %s" % lend["from"])
            link = link["next"]


def find_xqueue():
    for th in gdb.selected_inferior().threads():
        th.switch()
        fr = gdb.newest_frame()
        while fr:
            if fr.name() in FRAMES:
                try:
                    return fr.read_var("xq")
                except ValueError:
                    pass
            fr = fr.older()
    return None


xq = find_xqueue()
if xq is None:
    print("no engine frame with an XQueue in any thread")
else:
    head = xq["dev"]["queues"]
    off = int(gdb.parse_and_eval("(unsigned long)&((xs_xqueue *)0)->dev_link"))
    link = head["next"]
    while int(link) != int(head.address):
        show(gdb.parse_and_eval("*(xs_xqueue *)%d" % (int(link) - off)))
        link = link["next"]
