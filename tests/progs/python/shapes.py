"""shapes.py - the shapes of Python code an allocation comes from, each
allocating through gsext (the GIL released, as PyTorch's bindings do) a
size of its own, kept: methods, lambdas, decorators, generators, a
coroutine, code made by exec and eval, a recursion, an exception being
handled. Lines marked "# site: NAME" are looked up by
tests/integration/test_python_nogil.py.
"""
import functools

import gsext

KiB = 1024


def nested_inner(size):
    return gsext.alloc(size)  # site: nested inner


def nested_outer(size):
    return nested_inner(size)  # site: nested outer


class Layer:
    def __init__(self, size):
        self.size = size

    def forward(self):
        return gsext.alloc(self.size)  # site: method


def lambda_site(size):
    make = (lambda n:
            gsext.alloc(n))  # site: lambda body
    return make(size)  # site: lambda call


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)  # site: decorator wrapper
    return wrapper


@logged
def decorated(size):
    return gsext.alloc(size)  # site: decorated


def generator(size):
    yield gsext.alloc(size)  # site: generator


async def coroutine(size):
    return gsext.alloc(size)  # site: coroutine


def run_coroutine(size):
    c = coroutine(size)
    try:
        c.send(None)  # site: coroutine send
    except StopIteration as done:
        return done.value


GENERATED = "pad = 0\nptr = gsext.alloc(size)\n"


def exec_site(size):
    ns = {"gsext": gsext, "size": size}
    exec(compile(GENERATED, "<generated>", "exec"), ns)  # site: exec
    return ns["ptr"]


def eval_site(size):
    return eval("gsext.alloc(size)", {"gsext": gsext, "size": size})  # site: eval


def recurse(depth, size):
    if depth == 0:
        return gsext.alloc(size)  # site: recursion bottom
    return recurse(depth - 1, size)  # site: recursion


def while_handling(size):
    try:
        raise KeyError("missing")
    except KeyError:
        return gsext.alloc(size)  # site: except
