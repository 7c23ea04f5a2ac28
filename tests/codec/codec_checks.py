"""What scapy_check.py and tshark_check.py share: numbered checks, and the
closing line "NAME: N passed, M failed" that run.sh counts."""


class Checks:
    """checks(what, ok, details): one numbered line; a failure prints its
    details (at most max_details). width: digits of the number; cut: what is
    cut to this many characters."""

    def __init__(self, width, cut=None, max_details=None):
        self.n = 0
        self.failed = 0
        self.width = width
        self.cut = cut
        self.max_details = max_details

    def __call__(self, what, ok, details=()):
        self.n += 1
        print("  [%*d] %-66s %s" % (self.width, self.n, what[:self.cut], "ok" if ok else "FAIL"))
        if not ok:
            self.failed += 1
            for d in list(details)[:self.max_details]:
                print("       " + d)

    def summary(self, name):
        """Print the closing line; return the exit status."""
        print("%s: %d passed, %d failed" % (name, self.n - self.failed, self.failed))
        return 1 if self.failed else 0
