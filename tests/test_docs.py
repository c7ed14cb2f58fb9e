"""The documentation check (docs/contributing.md#writing-the-docs):

* every relative link and #anchor in README.md and docs/*.md resolves, with
  GitHub's anchor rules, and every page of docs/ is linked from the README;
* the README stays short;
* every code block marked runnable (an HTML comment `<!-- runnable -->` on the
  line before its fence) runs: bash and Python as they stand, C and C++
  compiled with the documented CANN link line, each in a fresh temporary
  directory, against the installed toolkit."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from urllib.parse import unquote

import pytest

from conftest import REPO
from pyaclnn.__main__ import compile_command

README = REPO / "README.md"
PAGES = [README] + sorted((REPO / "docs").glob("*.md"))
README_MAX_LINES = 160
BLOCK_TIMEOUT = 120

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
MARK = re.compile(r"^<!--\s*runnable(?::\s*(?P<file>[^\s>]+))?(?P<opts>(?:\s+[a-z]+=[^\s>]+)*)\s*-->\s*$")
LANGS = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python", "py": "python", "c": "c",
         "cpp": "cpp", "c++": "cpp"}


def rel(path):
    return str(path.relative_to(REPO))


# ---- parsing -----------------------------------------------------------------

class Block:
    def __init__(self, page, line, lang, body, marker):
        self.page, self.line, self.lang, self.body, self.marker = page, line, lang, body, marker
        self.file = self.requires = None
        self.opts = {}
        if marker is not None:
            m = MARK.match(marker)
            self.file = m.group("file")
            self.opts = dict(o.split("=", 1) for o in m.group("opts").split())
            self.requires = [r for r in self.opts.get("requires", "").split(",") if r]

    @property
    def id(self):
        return "%s:%d" % (rel(self.page), self.line)


def parse(page):
    """(prose, blocks): the page with its fenced blocks blanked (line numbers kept), and the blocks."""
    lines = page.read_text().split("\n")
    prose, blocks = [], []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^ {0,3}%s%s*\s*$" % (re.escape(fence), re.escape(fence[0])),
                                                lines[i]):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        before = lines[start - 1].strip() if start > 0 else ""
        marker = before if before.startswith("<!-- runnable") else None
        blocks.append(Block(page, start + 1, lang, "\n".join(body) + "\n", marker))
        prose.extend([""] * (min(i, len(lines)) - start))
    return "\n".join(prose), blocks


def strip_code_spans(text):
    """Inline code spans out (they may run over a line break, not over a blank line)."""
    return re.sub(r"(`+)(?:(?!\n\s*\n).)+?\1", "", text, flags=re.S)


def slug(heading):
    """GitHub's anchor for a heading's text (github-slugger): the rendered text
    lower-cased, every character but letters, digits, `_`, `-` and spaces
    dropped, spaces made `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML
    text = text.replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page):
    prose, _ = parse(page)
    seen, out = {}, set()
    for line in prose.split("\n"):
        m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else "%s-%d" % (s, n))
    out.update(re.findall(r"""<a\s+(?:id|name)=["']([^"']+)["']""", prose))
    return out


def links(page):
    """(line, target) of every link outside code."""
    prose, _ = parse(page)
    text = strip_code_spans(prose)
    out = []
    for m in re.finditer(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text):
        out.append((text.count("\n", 0, m.start()) + 1, m.group(1)))
    for m in re.finditer(r"""href=["']([^"']+)["']""", text):
        out.append((text.count("\n", 0, m.start()) + 1, m.group(1)))
    return out


def all_blocks():
    return [b for page in PAGES for b in parse(page)[1]]


# ---- links -------------------------------------------------------------------

@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_links_resolve(page):
    bad = []
    for line, target in links(page):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//", target):
            continue  # a URL: not checked here
        path, _, anchor = target.partition("#")
        dest = (page.parent / unquote(path)).resolve() if path else page
        where = "%s:%d: %s" % (rel(page), line, target)
        if REPO.resolve() not in dest.parents and dest != REPO.resolve():
            bad.append(where + " (outside the repository)")
        elif not dest.exists():
            bad.append(where + " (no such file)")
        elif anchor:
            if dest.suffix == ".md":
                if unquote(anchor) not in anchors(dest):
                    bad.append(where + " (no such anchor in %s)" % rel(dest))
            elif not re.match(r"^L\d+(-L\d+)?$", anchor):
                bad.append(where + " (an anchor into a file that is not markdown)")
    assert not bad, "unresolved links:\n  " + "\n  ".join(bad)


def test_slug_rules():
    assert slug("C++ with g++") == "c-with-g"
    assert slug("How pyaclnn differs from real CANN") == "how-pyaclnn-differs-from-real-cann"
    assert slug("PyTorch drop-ins: pyaclnn.torch") == "pytorch-drop-ins-pyaclnntorch"
    assert slug("llama.cpp's CANN backend") == "llamacpps-cann-backend"
    assert slug("CMake projects and set_env.sh") == "cmake-projects-and-set_envsh"
    assert slug("The `aclnn` [API](x.md)") == "the-aclnn-api"


def test_every_page_is_linked_from_the_readme():
    linked = {(README.parent / t.partition("#")[0]).resolve() for _, t in links(README) if t.partition("#")[0]}
    missing = [rel(p) for p in PAGES[1:] if p.resolve() not in linked]
    assert not missing, "docs pages the README does not link to: %s" % missing


def test_every_page_starts_with_what_a_reader_can_do():
    bad = []
    for page in PAGES[1:]:
        paras = [x.strip() for x in page.read_text().split("\n\n") if x.strip()]
        if not (paras[0].startswith("# ") and paras[1].startswith("What you can do with this page:")):
            bad.append(rel(page))
    assert not bad, "pages that do not start with 'What you can do with this page:' under the title: %s" % bad


def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= README_MAX_LINES, "README.md has %d lines (at most %d): move detail into docs/" % (
        n, README_MAX_LINES)


# ---- runnable blocks -------------------------------------------------------------

def test_markers_are_well_formed():
    bad = []
    for page in PAGES:
        lines = page.read_text().split("\n")
        for i, line in enumerate(lines):
            if not line.strip().startswith("<!-- runnable"):
                continue
            where = "%s:%d" % (rel(page), i + 1)
            if not MARK.match(line.strip()):
                bad.append(where + ": cannot parse %r" % line.strip())
            elif i + 1 >= len(lines) or not FENCE.match(lines[i + 1]):
                bad.append(where + ": not on the line before a fence")
    for b in all_blocks():
        if b.marker is None:
            continue
        if b.file is None and LANGS.get(b.lang) is None:
            bad.append("%s: runnable block of language %r (runnable: %s)" % (b.id, b.lang, sorted(LANGS)))
        if set(b.opts) - {"requires"}:
            bad.append("%s: unknown options %s" % (b.id, sorted(set(b.opts) - {"requires"})))
    assert not bad, "\n".join(bad)
    assert [b for b in all_blocks() if b.marker and not b.file], "no runnable block at all"


def test_the_documented_link_line_is_the_one_used():
    """C blocks are built with pyaclnn.__main__.compile_command: the line C and C++ builds shows."""
    line = " ".join(compile_command("app.cpp", "$HOME_DIR", compiler="g++"))
    assert line in (REPO / "docs" / "c-builds.md").read_text(), line


def runnable():
    return [b for b in all_blocks() if b.marker is not None and b.file is None]


def block_env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYACLNN_BACKEND", "ASCEND_HOME_PATH",
                                                             "ASCEND_TOOLKIT_HOME")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def run(cmd, cwd, env, what):
    try:
        proc = subprocess.run(cmd, cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail("%s: still running after %d s (runnable blocks must take seconds)" % (what, BLOCK_TIMEOUT))
    assert proc.returncode == 0, "%s failed (status %d):\n%s" % (what, proc.returncode, proc.stdout)
    return proc


@pytest.mark.parametrize("block", runnable(), ids=lambda b: b.id)
def test_runnable_block(block, tmp_path, home):
    for mod in block.requires:
        if importlib.util.find_spec(mod) is None:
            pytest.skip("%s needs %s, which is not installed" % (block.id, mod))
    for b in parse(block.page)[1]:  # the files written by the blocks above it
        if b.line >= block.line:
            break
        if b.marker is not None and b.file is not None:
            (tmp_path / b.file).write_text(b.body)
    env = block_env()
    kind = LANGS[block.lang]
    if kind == "bash":
        script = tmp_path / "block.sh"
        script.write_text(block.body)
        run(["bash", "-e", "-o", "pipefail", str(script)], tmp_path, env, block.id)
    elif kind == "python":
        script = tmp_path / "block.py"
        script.write_text(block.body)
        run([sys.executable, str(script)], tmp_path, env, block.id)
    else:
        source = tmp_path / ("block.c" if kind == "c" else "block.cpp")
        source.write_text(block.body)
        cmd = compile_command(source.name, str(home))
        if shutil.which(cmd[0]) is None:
            pytest.skip("compiler %s not found" % cmd[0])
        run(cmd, tmp_path, env, "%s (build: %s)" % (block.id, " ".join(cmd)))
        run([str(tmp_path / "a.out")], tmp_path, env, block.id)
