"""How long a sign-in attempt takes, by outcome: does the time tell whether an account exists?

    python bench/sign_in_timing.py [--tries 20]

Builds a wiki with the accounts plugin (fs storage, shared state in SQLite) and times
``Accounts.verify`` (one Argon2id hash, the account lookup, the sign-in record) for: a wrong
password of an existing account (the baseline), a name that does not exist, a disabled account, and
the right password. Prints the median and p90 in milliseconds and each median's ratio to the
baseline's, measured in the same run, interleaved so machine load hits every case alike. Prints
figures only; it never asserts timings.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hostcore_accounts import accounts

from hostcore import create_app

CASES = {
    "wrong password (baseline)": ("alice", "not the password at all"),
    "unknown name": ("nobody", "not the password at all"),
    "disabled account": ("carol", "the password of carol"),
    "right password": ("alice", "the password of alice"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app({"PLUGINS": ["fs", "accounts"], "STORAGE": "fs"}, instance_path=Path(tmp))
        host = app.extensions["hostcore"]
        store = accounts(host)
        store.create("alice", "the password of alice", ["write"])
        store.create("carol", "the password of carol", ["write"])
        store.update("carol", disabled=True)
        store.verify("nobody", "warm up the dummy hash")
        times: dict[str, list[float]] = {case: [] for case in CASES}
        for _ in range(args.tries):
            for case, (name, password) in CASES.items():
                start = time.perf_counter()
                store.verify(name, password)
                times[case].append((time.perf_counter() - start) * 1000)
        host.close()
    baseline = statistics.median(times["wrong password (baseline)"])
    print(f"sign-in attempts, {args.tries} each, Argon2id (argon2-cffi defaults)")
    for case, values in times.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"  {case:28s} median {median:7.1f} ms  p90 {p90:7.1f} ms  ratio {median / baseline:5.2f}")


if __name__ == "__main__":
    main()
