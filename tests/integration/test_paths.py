"""test_paths.py - every file path named in a comment or a doc exists
(DEVELOPERS.md: "a path named in a comment or a doc must exist"). Read: the
comments of C, headers and Makefile, the comments and docstrings of Python,
and every Markdown page, in the files git tracks. A path is a run of name
characters that begins with one of the tree's top folders; placeholders are
not paths: a last part in capitals (TARGET, T, N), one that ends in "_" or
".." (a family: tests/unit/test_), and those under BUILD/.
"""
import io
import os
import re
import subprocess
import tokenize

from harness import check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPS = r"(?:analyzer|shim|include|tests|examples|docs|scripts|\.ci)"
PATH = re.compile(r"(?<![\w/.$-])(" + TOPS + r"/[A-Za-z0-9_./-]*[A-Za-z0-9_])")
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
HASH_COMMENT = re.compile(r"#[^\n]*")


def python_comments(text):
    """Comments and docstrings (a string that is a statement of its own)."""
    out, last = [], None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append(tok.string)
            elif tok.type == tokenize.STRING and last in (None, tokenize.NEWLINE, tokenize.INDENT,
                                                          tokenize.DEDENT, tokenize.NL):
                out.append(tok.string)
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                last = tok.type
    except (tokenize.TokenError, SyntaxError):
        return text
    return " ".join(out)


def named(path, text):
    if path.endswith((".c", ".h", ".cu")):
        return " ".join(C_COMMENT.findall(text))
    if path.endswith(".py"):
        return python_comments(text)
    if path.endswith(".md"):
        return text
    if os.path.basename(path) in ("Makefile", "run") or path.endswith((".sh", ".supp", ".map")):
        return " ".join(HASH_COMMENT.findall(text))
    return ""


def placeholder(p):
    last = p.rstrip("/").split("/")[-1]
    return last.isupper() or last.endswith("_") or re.fullmatch(r"[A-Z_]+(\.\w+)?", last)


def test_every_path_named_in_a_comment_or_a_doc_exists():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    missing = []
    for f in files:
        try:
            with open(os.path.join(ROOT, f), errors="replace") as fh:
                text = named(f, fh.read())
        except (IsADirectoryError, FileNotFoundError):
            continue
        for m in PATH.finditer(text):
            p = m.group(1).rstrip(".")
            if placeholder(p):
                continue
            if not os.path.exists(os.path.join(ROOT, p)):
                missing.append(f"{f}: {p}")
    check(len(files) > 300, f"git lists the tree: {len(files)} files")
    check(not missing, "paths named that do not exist:\n  " + "\n  ".join(sorted(set(missing))))
