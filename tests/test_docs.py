"""The docs site builds with warnings as errors and shows every step; the README index is current.

The site is built once per test run (shared by the xdist workers) from the
notebooks that ``tests/test_notebooks.py`` executes; see docs/contributing.md.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"dezero_like_tools_{name}", TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_docs = _load("build_docs")
step_diffs = _load("step_diffs")
readme_index = _load("readme_index")
nbtool = build_docs.notebooks
SCRIPTS = nbtool.step_scripts()
NAMES = [s.stem for s in SCRIPTS]


def page_text(path):
    """The visible text of an HTML file, whitespace collapsed."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", Path(path).read_text(), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", text)))


# --------------------------------------------------------------------------- #
# Tools, on small inputs made here
# --------------------------------------------------------------------------- #


def _write_step(folder, number, code, title="A step"):
    path = folder / f"step{number:02d}.py"
    path.write_text(
        f"# %% [markdown]\n# # Step {number:02d}: {title}\n#\n# Prose.\n\n# %%\n{code}\n"
    )
    return path


def test_step_diff_is_against_the_closest_previous_step(tmp_path):
    first = _write_step(tmp_path, 1, "x = 1\nprint(x)")
    third = _write_step(tmp_path, 3, "x = 1\ny = 2\nprint(x + y)", title="Other prose")
    assert step_diffs.previous_script(third, tmp_path) == first
    assert step_diffs.previous_script(first, tmp_path) is None
    diff = step_diffs.step_diff(third, tmp_path)
    assert diff.startswith("--- steps/step01.py\n+++ steps/step03.py\n")
    assert "+y = 2\n" in diff and "-print(x)\n" in diff and "+print(x + y)\n" in diff
    assert "Other prose" not in diff, "prose cells are left out of the default diff"
    assert "+# # Step 03: Other prose\n" in step_diffs.step_diff(third, tmp_path, prose=True)
    assert step_diffs.step_diff(first, tmp_path) == ""


def test_step_diff_markdown_fence_survives_backticks(tmp_path):
    _write_step(tmp_path, 1, "a = 1")
    second = _write_step(tmp_path, 2, 'doc = """```python\\nx\\n```"""')
    md = step_diffs.diff_markdown(second, tmp_path)
    assert "1 lines added, 1 removed" in md
    assert "\n````diff\n" in md and md.endswith("\n````")
    first_md = step_diffs.diff_markdown(tmp_path / "step01.py", tmp_path)
    assert "first step" in first_md and "```" not in first_md


def test_api_pages_cover_every_public_module():
    modules = build_docs.api_modules()
    for name in ("dezero_like", "dezero_like.core", "dezero_like.functions",
                 "dezero_like.utils", "dezero_like.cuda"):
        assert name in modules
    expected = {
        "dezero_like." + p.stem for p in (ROOT / "dezero_like").glob("*.py")
        if not p.stem.startswith("_")
    }
    assert expected <= set(modules)


def test_readme_index_tool_round_trip(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n\nIntro.\n")
    assert readme_index.main(["check", "--readme", str(readme)]) == 2  # no markers
    with pytest.raises(readme_index.MarkersMissing, match="curriculum:start"):
        readme_index.render(readme.read_text(), "table")
    readme.write_text(f"# Title\n\n{readme_index.START}\nold\n{readme_index.END}\n\nEnd.\n")
    assert readme_index.main(["check", "--readme", str(readme)]) == 1
    assert readme_index.main(["write", "--readme", str(readme)]) == 0
    assert readme_index.main(["check", "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert "old" not in text and text.endswith(f"{readme_index.END}\n\nEnd.\n")
    for script in SCRIPTS:
        title = nbtool.step_title(script).replace("|", "\\|")
        row = f"| {nbtool.step_number(script):02d} | {title} | [script](steps/{script.name})"
        assert row in text
        assert f"[test](tests/steps/test_{script.stem}.py)" in text


def test_every_step_is_in_one_stage_and_each_stage_has_one_open_experiment():
    """The README groups the curriculum by stage and promises one open experiment per stage."""
    firsts = [first for first, _ in nbtool.STAGES]
    assert firsts[0] == 1 and firsts == sorted(set(firsts)), firsts
    groups = nbtool.stages(SCRIPTS)
    assert [len(g[2]) for g in groups] and all(g[2] for g in groups)
    assert [s for g in groups for s in g[2]] == list(SCRIPTS), "each step in exactly one stage"
    assert len(groups) == len(nbtool.STAGES), "a stage without a step"
    for number, title, members in groups:
        experiments = [s.name for s in members
                       if re.search(r"^# ## Open experiment", s.read_text(), re.M)]
        assert len(experiments) == 1, (
            f"stage {number} ({title}) has open experiments in {experiments or 'no step'}: "
            "README.md promises one per stage")


def test_readme_curriculum_index_is_current():
    text = (ROOT / "README.md").read_text()
    try:
        expected = readme_index.render(text, readme_index.index_table())
    except readme_index.MarkersMissing as e:
        pytest.fail(f"README.md has no curriculum index: {e}")
    assert text == expected, (
        "README.md's curriculum index is stale: run python tools/readme_index.py write"
    )


# --------------------------------------------------------------------------- #
# The site, built once per test run
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="session")
def site(notebook_cache):
    """Build the site (once per run, whichever worker gets here first) and return its folder."""
    pytest.importorskip("sphinx", reason="the docs tools are in the test extra")
    pytest.importorskip("myst_nb", reason="the docs tools are in the test extra")
    root = notebook_cache.parent  # this run's directory, shared by the workers
    out, failed = root / "docs-site", root / "docs-site.failed"
    with nbtool.file_lock(root / "docs-site.lock"):
        if failed.exists():
            pytest.fail(failed.read_text(), pytrace=False)
        if not (out / "index.html").exists():
            try:
                timings = build_docs.build(out, notebook_cache, stage=root / "docs-src")
            except build_docs.DocsBuildError as e:
                failed.write_text(str(e))
                pytest.fail(str(e), pytrace=False)
            (root / "docs-site.json").write_text(json.dumps(timings))
    return out


def test_site_builds_with_warnings_as_errors(site, record_property):
    assert (site / "index.html").exists()
    timings = json.loads((site.parent / "docs-site.json").read_text())
    record_property("docs_build_seconds", round(timings["sphinx_s"], 2))
    assert timings["notebooks"] == len(NAMES)


def test_ci_runs_exactly_the_readmes_test_command():
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"run the whole test suite.*?```bash\n(.+?)\n```", readme, re.S).group(1)
    lines = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    assert lines[-1] == command, (lines[-1], command)


def test_home_page_has_the_two_commands(site):
    text = page_text(site / "index.html")
    readme = (ROOT / "README.md").read_text()
    demo = re.search(r"## Quick start.*?```bash\n(.+?)\n```", readme, re.S).group(1)
    assert demo == "pip install -e . && python tools/run_steps.py 1 14 33 53", demo
    assert demo in text  # the home page gives the README's two commands
    assert 'pip install -e ".[test]" && python -m pytest -n 2' in text
    for page in ("install.html", "contributing.html", "steps/index.html", "api/index.html"):
        assert (site / page).exists(), page


def test_curriculum_lists_every_step(site):
    index = (site / "steps" / "index.html").read_text()
    # Sphinx typesets apostrophes and quotes as typographic ones
    text = page_text(site / "steps" / "index.html").replace("\u2019", "'").replace("\u201c", '"')
    text = text.replace("\u201d", '"')
    for script in SCRIPTS:
        assert f'href="{script.stem}.html"' in index, f"no link to the {script.stem} page"
        title = re.sub(r"`", "", nbtool.step_title(script))
        assert title in text
        assert build_docs.github_url(f"tests/steps/test_{script.stem}.py") in index
        assert nbtool.colab_url(script.stem) in index


@pytest.mark.parametrize("name", NAMES)
def test_step_page_has_outputs_and_diff(site, name):
    page = site / "steps" / f"{name}.html"
    assert page.exists()
    raw = page.read_text()
    assert 'class="cell_output' in raw, "the page shows no cell output: was it executed?"
    text = page_text(page)
    assert "What this step adds" in text
    script = ROOT / "steps" / f"{name}.py"
    if step_diffs.previous_script(script) is not None:
        assert "highlight-diff" in raw, "the step's diff is not rendered as a diff block"


def test_api_pages_document_the_package(site):
    core = (site / "api" / "dezero_like.core.html").read_text()
    assert 'id="dezero_like.core.Variable"' in core
    assert 'id="dezero_like.core.Variable.backward"' in core
    for module in build_docs.api_modules():
        if module != "dezero_like":
            assert (site / "api" / f"{module}.html").exists(), module


# --------------------------------------------------------------------------- #
# In a real browser
# --------------------------------------------------------------------------- #

PROBE = """<script>
window.addEventListener("load", function () {
  var shown = function (e) { return e.offsetHeight > 0 && e.offsetWidth > 0; };
  var report = {inputs: [], outputs: [], images: []};
  document.querySelectorAll("div.cell_input").forEach(function (e) {
    if (shown(e)) report.inputs.push(e.innerText);
  });
  document.querySelectorAll("div.cell_output").forEach(function (e) {
    if (shown(e)) report.outputs.push(e.innerText);
  });
  document.querySelectorAll("div.cell_output img, div.cell_output svg").forEach(function (e) {
    var box = e.getBoundingClientRect();
    var isImg = e.tagName.toLowerCase() === "img";
    report.images.push({tag: e.tagName.toLowerCase(), src: e.getAttribute("src"),
                        decoded: isImg ? (e.complete && e.naturalWidth > 0) : true,
                        width: box.width, height: box.height});
  });
  var pre = document.createElement("pre");
  pre.id = "browser-report";
  pre.textContent = JSON.stringify(report);
  document.body.appendChild(pre);
});
</script>"""


class _OutputImages(HTMLParser):
    """Finds <img>/<svg> tags inside ``div.cell_output`` blocks of a page."""

    def __init__(self):
        super().__init__()
        self.depth, self.found = [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "div":
            self.depth.append("cell_output" in (dict(attrs).get("class") or "").split())
        elif tag in ("img", "svg") and any(self.depth):
            self.found += 1

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth.pop()


def output_images(page):
    parser = _OutputImages()
    parser.feed(Path(page).read_text())
    return parser.found


@pytest.fixture(scope="session")
def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium to test the site in a browser: apt-get install -y chromium "
                "(.ci/run installs it)")


def run_browser(chromium, url, tmp_path, *flags):
    cmd = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}", *flags, url,
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def browser_report(chromium, page, tmp_path):
    """Open ``page`` (a copy with a probe script, next to it) and return what the browser shows."""
    probe = page.with_name(f"{page.stem}-probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>", 1))
    try:
        dom = run_browser(chromium, probe.as_uri(), tmp_path, "--dump-dom")
    finally:
        probe.unlink()
    m = re.search(r'<pre id="browser-report">(.*?)</pre>', dom, re.S)
    assert m, "the probe script did not run in the browser"
    return json.loads(html.unescape(m.group(1)))


@pytest.mark.skipif(not NAMES, reason="no step scripts yet")
def test_browser_shows_a_step_with_code_and_output(site, chromium, tmp_path):
    page = site / "steps" / f"{NAMES[0]}.html"
    report = browser_report(chromium, page, tmp_path)
    code, shown = "\n".join(report["inputs"]), "\n".join(report["outputs"])
    assert "import dezero_like" in code  # the Colab set-up cell
    assert "dezero_like " in shown  # ...and what it printed
    assert "self-check passed" in shown
    if NAMES[0] == "step01":
        assert "class Variable" in code
        assert "same object: True" in shown
    shot = tmp_path / f"{NAMES[0]}.png"
    run_browser(chromium, page.as_uri(), tmp_path, f"--screenshot={shot}",
                "--window-size=1280,1400", "--hide-scrollbars")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_browser_shows_a_rendered_graph_image(site, chromium, tmp_path):
    pages = [site / "steps" / f"{n}.html" for n in NAMES]
    with_images = [p for p in pages if output_images(p)]
    if not with_images:
        pytest.skip("no step page has an image output yet (the first is step 04's plot)")
    page = with_images[0]
    report = browser_report(chromium, page, tmp_path)
    assert report["images"], f"{page.name}: the browser shows no image in the cell outputs"
    for image in report["images"]:
        assert image["decoded"], f"{page.name}: image {image['src']} did not load"
        assert image["width"] > 20 and image["height"] > 20, f"{page.name}: {image} is not visible"


MATH_PROBE = """<script>
window.addEventListener("load", function () {
  var report = function (how) {
    var pre = document.createElement("pre");
    pre.id = "browser-report";
    var text = document.querySelector("article") || document.body;
    pre.textContent = JSON.stringify({
      how: how,
      rendered: document.querySelectorAll("mjx-container").length,
      raw: (text.innerText.match(/\\\\\\(|\\\\\\[/g) || []).length,
      mathjax: Array.from(document.scripts).map(function (s) { return s.src; })
        .filter(function (src) { return src.indexOf("mathjax") >= 0; })
    });
    document.body.appendChild(pre);
  };
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(function () { report("typeset"); },
                                 function () { report("failed"); });
  } else {
    report("no MathJax");
  }
});
</script>"""


def test_browser_renders_maths_without_network(site, chromium, tmp_path):
    """MathJax is served from the site: formulas render with no network (raw TeX otherwise)."""
    page = site / "steps" / "step04.html"
    assert "$" in (ROOT / "steps" / "step04.py").read_text(), "step 04 has formulas"
    probe = page.with_name("step04-math-probe.html")
    probe.write_text(page.read_text().replace("</body>", MATH_PROBE + "</body>", 1))
    try:
        dom = run_browser(chromium, probe.as_uri(), tmp_path, "--dump-dom",
                          "--virtual-time-budget=20000")
    finally:
        probe.unlink()
    m = re.search(r'<pre id="browser-report">(.*?)</pre>', dom, re.S)
    assert m, "the probe script did not run in the browser"
    report = json.loads(html.unescape(m.group(1)))
    assert report["mathjax"] and all(src.startswith("file:") for src in report["mathjax"]), (
        f"MathJax must come from the site itself, not a CDN: {report['mathjax']}"
    )
    assert report["how"] == "typeset" and report["rendered"] > 0, report
    assert report["raw"] == 0, f"raw TeX left in the page: {report}"
    badge = re.search(r'<img alt="Open In Colab" src="([^"]+)"', page.read_text())
    assert badge and not badge.group(1).startswith("http"), "the badge image is the site's own"
    assert (page.parent / badge.group(1)).resolve().exists()


if __name__ == "__main__":  # pragma: no cover - handy for a quick local run
    sys.exit(pytest.main([__file__, "-q"]))


def test_package_diff_shows_what_a_step_changes_in_the_package():
    diff = step_diffs.package_diff(63)
    assert diff.startswith("--- dezero_like/core.py (step 62)\n+++ dezero_like/core.py (step 63)\n")
    assert "+        if not self.requires_grad:\n" in diff
    assert "dezero_like/functions.py" not in diff, "step 63 changes only core.py"
    assert "+    __slots__ = (\n" in step_diffs.package_diff(70)
    assert step_diffs.package_diff(24) == "", "step 24 writes no package code"
    assert step_diffs.package_diff(23) == "", "step 23 has no package before it to diff against"
    md = step_diffs.diff_markdown(step_diffs.STEPS / "step63.py")
    assert "## What this step changes in the package" in md


def test_the_steps_this_file_runs_over_were_found():
    """The parametrized tests above run over a list found on disk; an empty list would make
    them all skip as an empty parameter set (and a loop over it pass), so it is counted."""
    assert len(SCRIPTS) == 74, f"found {len(SCRIPTS)} step scripts, the course has 74"


# --------------------------------------------------------------------------- #
# What the README and the docs pages name must exist (no site build needed)
# --------------------------------------------------------------------------- #

DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GENERATED_PAGES = {"steps/index", "api/index"}  # tools/build_docs.py writes these pages
_REPO_PATH = re.compile(r"(?<![\w/.-])((?:tests|tools|benchmarks|steps|docs|dezero_like|notebooks|"
                        r"\.ci)/[\w./-]*\w)")
_LINK = re.compile(r"\]\(([^)#\s:]+)\)")  # a relative link: no scheme, so no "https:"
# a command of a tool or benchmark, up to the end of its code span, line, or comment
_COMMAND = re.compile(r"python ((?:tools|benchmarks)/\w+\.py)([^`\n|;&)#]*)")


def test_the_docs_pages_were_found():
    assert len(DOC_PAGES) >= 8, [p.name for p in DOC_PAGES]


def test_files_the_docs_name_exist():
    """Every repository path (tests/..., tools/...) and relative link of the README and docs/."""
    missing = []
    for page in DOC_PAGES:
        text = page.read_text()
        for m in _REPO_PATH.finditer(text):
            path = m.group(1)
            if "NN" in path or path.removesuffix(".md") in GENERATED_PAGES:  # stepNN is a pattern
                continue
            if not (ROOT / path).exists():
                missing.append(f"{page.relative_to(ROOT)}: {path}")
        for m in _LINK.finditer(text):
            target = m.group(1)
            if page.parent.name == "docs" and target.removesuffix(".md") in GENERATED_PAGES:
                continue
            if not (page.parent / target).exists():
                missing.append(f"{page.relative_to(ROOT)}: link ({target})")
    assert not missing, "the docs name files that do not exist:\n" + "\n".join(missing)


def test_options_the_docs_quote_are_the_scripts_own():
    """``python tools/X.py --opt`` and ``python benchmarks/X.py --opt``: the script takes --opt."""
    wrong, seen = [], 0
    for page in DOC_PAGES:
        for m in _COMMAND.finditer(page.read_text()):
            seen += 1
            script = ROOT / m.group(1)
            if not script.exists():
                wrong.append(f"{page.name}: {m.group(0)!r}: no {m.group(1)}")
                continue
            source = script.read_text()
            for option in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", m.group(2)):
                if f'"{option}"' not in source:
                    wrong.append(f"{page.name}: {m.group(0).strip()!r}: {m.group(1)} has no "
                                 f"option {option}")
    assert seen > 20, f"only {seen} commands found: has the pattern stopped matching?"
    assert not wrong, "\n".join(wrong)


def test_extras_the_docs_install_are_in_pyproject():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    quoted = {(page.name, name) for page in DOC_PAGES
              for name in re.findall(r"\.\[([\w-]+)\]", page.read_text())}
    assert {name for _, name in quoted} >= {"test", "gpu", "mpi"}, quoted
    assert not [q for q in quoted if q[1] not in extras], f"pyproject.toml has {sorted(extras)}"


def test_test_names_the_docs_quote_exist():
    """A test named in backticks (`test_renders_with_system_graphviz`) is defined in tests/."""
    import dezero_like

    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("*.py"))
    missing = []
    for page in DOC_PAGES:
        for name in re.findall(r"`(test_\w*)\*?`", page.read_text()):
            if hasattr(dezero_like, name):  # `test_mode` is the package's, not a test
                continue
            if not re.search(rf"^\s*def {name}", sources, re.MULTILINE):
                missing.append(f"{page.name}: {name}")
    assert not missing, "no such test in tests/: " + ", ".join(missing)


def test_readmes_module_table_names_what_the_modules_hold():
    """Each name in the README's "What the package contains" table is found in its module."""
    import importlib

    import dezero_like

    text = (ROOT / "README.md").read_text()
    table = text.split("## What the package contains", 1)[1].split("\n\n", 2)[1]
    rows = [line.split("|")[1:3] for line in table.splitlines()[2:]]
    assert len(rows) >= 12, table
    missing = []
    for first, second in rows:
        modules = [dezero_like]
        names = []
        for word in re.findall(r"`([\w.]+)`", first + second):
            module = word if word.startswith("dezero_like.") else f"dezero_like.{word}"
            try:
                modules.append(importlib.import_module(module))
            except ImportError:
                names.append(word)
        places = modules + [obj for m in modules for obj in vars(m).values()
                            if isinstance(obj, type) and obj.__module__ == m.__name__]
        missing += [f"{first.strip()}: {name}" for name in names
                    if name not in ("F", "L") and not any(hasattr(p, name) for p in places)]
    assert not missing, "the README's module table names what is not there: " + ", ".join(missing)


def test_gpu_checks_time_limits_are_those_contributing_quotes():
    """docs/contributing.md quotes tools/gpu_check.sh's default limits; they must agree."""
    script = (TOOLS / "gpu_check.sh").read_text()
    page = (ROOT / "docs" / "contributing.md").read_text()
    quoted = dict(re.findall(r"`(TESTS_S|STEPS_S|BENCH_S)=(\d+)`", page))
    assert set(quoted) == {"TESTS_S", "STEPS_S", "BENCH_S"}, quoted
    for name, value in quoted.items():
        assert f"{name}=${{{name}:-{value}}}" in script, f"{name}: the docs say {value}"


def test_environment_variables_the_docs_name_are_read_somewhere():
    """DEZERO_LIKE_DATA, CUPY_ON_CPU_NOISE, ...: each is read by the package, a tool or a test."""
    code = "\n".join(p.read_text() for folder in ("dezero_like", "tools", "tests", "benchmarks")
                     for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".sh"))
    names = {name for page in DOC_PAGES for name in re.findall(
        r"\b((?:DEZERO_|CUPY_ON_CPU|GPU_CHECK_)[A-Z_]*[A-Z])\b", page.read_text())}
    assert "DEZERO_LIKE_DATA" in names, names
    assert not [n for n in names if n not in code], sorted(n for n in names if n not in code)


def test_subcommands_the_docs_quote_are_the_scripts_own():
    """``python tools/export.py upto N OUT``: the first plain word after a tool is one of its
    commands (a quoted string in its source), so a renamed command cannot stay in the docs."""
    wrong, seen = [], 0
    for page in DOC_PAGES:
        text = re.sub(r"\s*\n\s*", " ", page.read_text())  # a command may wrap in prose
        for m in _COMMAND.finditer(text):
            words = m.group(2).split()
            if not words or not re.fullmatch(r"[a-z][a-z-]+", words[0]):
                continue  # an option, a step number, or a placeholder (N, PATH, OUT)
            seen += 1
            if f'"{words[0]}"' not in (ROOT / m.group(1)).read_text():
                wrong.append(f"{page.name}: {m.group(0).strip()!r}: {m.group(1)} has no "
                             f"command {words[0]!r}")
    assert seen >= 10, f"only {seen} subcommands found: has the pattern stopped matching?"
    assert not wrong, "\n".join(wrong)


def _mnist_steps():
    """The steps that load MNIST's files (and so need the network or a cache)."""
    import ast

    def calls(script):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.Call):
                yield getattr(node.func, "attr", getattr(node.func, "id", None))

    return {int(s.stem[4:]) for s in SCRIPTS
            if {"mnist_train_test", "MNIST"} & set(calls(s))}


def test_the_mnist_steps_the_docs_name_are_those_that_load_mnist():
    found = _mnist_steps()
    assert found == {53, 54, 60, 74}, found  # the numbers the prose below is checked against
    for page, pattern in ((ROOT / "README.md", r"Only the MNIST steps \(([\d, and]+)\)"),
                          (ROOT / "docs" / "install.md", r"steps ([\d, and]+) train on MNIST")):
        quoted = re.search(pattern, re.sub(r"\s+", " ", page.read_text()))
        assert quoted, f"{page.name} no longer names the MNIST steps as {pattern!r}"
        assert {int(n) for n in re.findall(r"\d+", quoted.group(1))} == found, page.name


def test_step_numbers_and_stages_the_docs_quote_exist():
    """"step 75" or "Stage 8" cannot appear: the course has 74 steps in the stages of STAGES,
    and a range quoted as a stage (Stage 4 ... steps 38-56) is that stage's range."""
    last = len(SCRIPTS)
    bounds = [first for first, _ in nbtool.STAGES] + [last + 1]
    stages = {k + 1: (bounds[k], bounds[k + 1] - 1) for k in range(len(nbtool.STAGES))}
    wrong = []
    for page in DOC_PAGES:
        text = re.sub(r"\s+", " ", page.read_text())
        for m in re.finditer(r"\b[Ss]teps? (\d+)(?![.\d])(?:\s*[-–]\s*(\d+))?", text):
            numbers = [int(n) for n in m.groups() if n]
            if not all(1 <= n <= last for n in numbers):
                wrong.append(f"{page.name}: {m.group(0)!r} (the course has steps 1-{last})")
        for m in re.finditer(r"\bStage (\d+)\b[^()]{0,80}?\(steps (\d+)[-–](\d+)\)", text):
            k, first, end = map(int, m.groups())
            if stages.get(k) != (first, end):
                wrong.append(f"{page.name}: {m.group(0)!r}, but STAGES has {stages.get(k)}")
    assert len(stages) == 7, stages
    assert not wrong, "\n".join(wrong)


def test_the_home_page_links_every_page_of_the_site():
    """A new reader finds each page from the home page's "Where to go next", not only from
    the sidebar: every docs/*.md and generated page is linked there."""
    home = (ROOT / "docs" / "index.md").read_text()
    linked = set(re.findall(r"\]\(([\w/-]+)\.md\)", home.split("## Where to go next", 1)[1]))
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")} - {"index"} | GENERATED_PAGES
    assert pages - linked == set(), f"not linked from docs/index.md: {sorted(pages - linked)}"


# --------------------------------------------------------------------------- #
# docs/pytorch.md: the names and defaults it quotes are the package's
# --------------------------------------------------------------------------- #

PYTORCH_PAGE = ROOT / "docs" / "pytorch.md"


def test_the_functions_and_layers_pytorch_md_names_exist_or_are_refused_with_a_translation():
    """Every ``F.name``, ``L.name``, ``dz.name`` and ``dezero_like.name`` of docs/pytorch.md is
    there, or (PyTorch's names, such as ``F.cross_entropy``) raises an AttributeError that says
    it is PyTorch's name and what to write: a renamed function would leave the page wrong."""
    import dezero_like
    import dezero_like.functions as F
    import dezero_like.layers as L

    modules = {"F": F, "L": L, "dz": dezero_like, "dezero_like": dezero_like}
    text = PYTORCH_PAGE.read_text()
    found = set(re.findall(r"(?<![\w.])(F|L|dz|dezero_like)\.([A-Za-z_]\w*)", text))
    assert len(found) > 40, f"only {len(found)} names found: has the pattern stopped matching?"
    wrong, refused = [], 0
    for prefix, name in sorted(found):
        try:
            getattr(modules[prefix], name)
        except AttributeError as error:
            if "PyTorch's name" in str(error) and "write" in str(error):
                refused += 1
            else:
                wrong.append(f"{prefix}.{name}: {error}")
    assert not wrong, "docs/pytorch.md names what the package does not have:\n" + "\n".join(wrong)
    assert refused >= 10, f"only {refused} of PyTorch's names refused: F.cross_entropy and co."


def test_the_defaults_pytorch_md_quotes_are_the_signatures():
    """The "Defaults (Chainer's)" and ``leaky_relu`` rows quote default arguments."""
    import inspect

    import dezero_like.functions as F
    import dezero_like.layers as L
    from dezero_like import optimizers as O

    def default(f, name):
        return inspect.signature(f).parameters[name].default

    text = PYTORCH_PAGE.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| Defaults (Chainer's)"))
    quoted = {"batch norm `eps`": default(L.BatchNorm, "eps"),
              "AdaGrad `lr`": default(O.AdaGrad, "lr"),
              "and `eps`": default(O.AdaGrad, "eps"),
              "AdaDelta `rho`": default(O.AdaDelta, "rho"),
              "SGD `lr`": default(O.SGD, "lr"),
              "MomentumSGD `momentum`": default(O.MomentumSGD, "momentum")}
    for words, value in quoted.items():
        m = re.search(re.escape(words) + r" (\d[0-9.e-]*\d)", row)
        assert m and float(m.group(1)) == value, (
            f"docs/pytorch.md's defaults row says {words} {m and m.group(1)}, the code has {value}")
    assert default(F.leaky_relu, "slope") == 0.2 and "`leaky_relu(x, slope=0.2)`" in text
