"""forked.py - Python frames in a forked child: the parent allocates 1 MiB
(parent_alloc), forks, and the child allocates 2 MiB (child_alloc) and
exits; both keep theirs. Each process writes its own trace, and the
child's defines its code objects again.

Usage: forked.py LIBCUDA. Lines marked "# site: NAME" are looked up by
tests/integration/test_python.py.
"""
import os
import sys

from cuda import Driver

MiB = 1024 * 1024


def parent_alloc(driver):
    return driver.alloc(1 * MiB)  # site: parent


def child_alloc(driver):
    return driver.alloc(2 * MiB)  # site: child


def main(path):
    driver = Driver(path, keep_gil=True)
    driver.use_device(0)
    parent_alloc(driver)  # site: parent call
    pid = os.fork()
    if pid == 0:
        child_alloc(driver)  # site: child call
        sys.stdout.flush()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("child exited", os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main(sys.argv[1])  # site: main
