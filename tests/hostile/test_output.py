"""Hostile corpus, output (issue 24): spec, snapshot and file-name values written to steer the CI runner
(workflow commands), a commit's trailers and the reviewer's Markdown; and a pull request's comment carrying the
plan comment's marker."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.cli.console import _LineGuard
from aicr_gen.drift import fleet
from aicr_gen.gitops.review.plan import ClusterPlan, plan
from aicr_gen.report import drift as drift_report
from aicr_gen.report import fleet_drift as fleet_format
from aicr_gen.report import plan as plan_format
from aicr_gen.text import markdown
from tests.conftest import Result, run_process
from tests.project.test_github import COMMENT_STEP, GIT_ENV, MARKER, _FakeGitHub, _run_step, fake_github

COMMANDS = ["::error file=a.yaml,line=1::pwned", "::stop-commands::deadbeef", "::add-mask::hunter2",
            "::set-output name=ok::pwned", "::warning::pwned", "##[error]pwned", "##[add-mask]hunter2"]
"""Workflow commands as the runner reads them (actions/runner src/Runner.Common/ActionCommand.cs)."""
BREAKS = ["\n", "\r", "\r\n", "\n  ", "\n\t", "\n\u00a0", "\n\u2003"]
"""Line breaks the runner splits at (StreamReader.ReadLine), then white space its TrimStart removes."""
HOSTILE = [f"v1{brk}{command}" for brk in BREAKS for command in COMMANDS] + [f"x {command}" for command in COMMANDS]
_RUNNER_LINE = re.compile(r"\r\n|\r|\n")


def runner_commands(text: str) -> list[str]:
    """The lines of ``text`` the GitHub Actions runner would run as workflow commands: TryParseV2 (trimmed,
    starting with ``::``) or TryParse (``##[`` anywhere)."""
    return [line for line in _RUNNER_LINE.split(text) if line.lstrip().startswith("::") or "##[" in line]


def assert_no_command(result: Result) -> None:
    assert runner_commands(result.out) == [], result.out
    assert runner_commands(result.err) == [], result.err
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err


# ------------------------------------------------------------------------------------- workflow commands

def _through_guard(chunks: list[str], flush_after: set[int]) -> str:
    sink = _Sink()
    guard = _LineGuard(sink)  # type: ignore[arg-type]
    for index, chunk in enumerate(chunks):
        guard.write(chunk)
        if index in flush_after:
            guard.flush()
    guard.finish()
    return sink.text


class _Sink:
    """The stream under the guard: what reached it."""

    def __init__(self) -> None:
        self.text = ""
        self.encoding, self.errors = "utf-8", "strict"

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        """Nothing buffered."""


@pytest.mark.parametrize("value", HOSTILE)
def test_the_guard_rewrites_a_command_however_the_text_is_split_and_flushed(value: str) -> None:
    text = f"aicr-gen: error: version {value!s} is not pinned\nnext line\n"
    for cut in range(1, len(text)):
        for flush_after in (set(), {0}):
            out = _through_guard([text[:cut], text[cut:]], flush_after)
            assert runner_commands(out) == [], (cut, flush_after, out)
            assert out.replace("\\:", ":").replace("#\\u0023[", "##[") == text  # nothing else changed


def test_the_guard_leaves_ordinary_output_byte_for_byte() -> None:
    text = "== clusters/a.yaml\nerror p spec.x: a: b\r\n  key: value # comment [x]\n{\"a\": \"::\"}\npartial"
    assert _through_guard([text], set()) == text
    assert _through_guard(list(text), set(range(len(text)))) == text  # one character a write, each flushed


@pytest.fixture(scope="module")
def hostile_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ClusterSpec whose gpu-operator pin is a line break and a workflow command (the pinned-semver-versions
    policy quotes it in its finding)."""
    folder = tmp_path_factory.mktemp("spec")
    result = run_process("spec", "init", "--service", "eks", "--accelerator", "h100", "--intent", "training",
                         "--os", "ubuntu", "-o", str(folder / "spec.yaml"))
    assert result.code == 0, result
    spec = folder / "spec.yaml"
    text = spec.read_text().replace("https://replace-me.invalid/your-org/gitops.git",
                                    "https://github.com/example/gitops.git")
    pin = json.dumps("v1\n::stop-commands::deadbeef\r  ::add-mask::hunter2 ##[error]pwned")
    spec.write_text(text.replace("versions: {}", f"versions:\n    gpu-operator: {pin}", 1))
    return spec


@pytest.mark.parametrize("command", [["lint"], ["policy", "check"]])
def test_lint_and_policy_check_findings_run_no_workflow_command(hostile_spec: Path, command: list[str]) -> None:
    """The pin is refused by the version grammar (issue 24's limits) and quoted on one line, commands and all."""
    result = run_process(*command, str(hostile_spec))
    assert result.code == 2, result
    assert "spec.versions.gpu-operator" in result.out + result.err and "is not a version" in result.out + result.err
    assert_no_command(result)
    # the value is still there to read, on one line, its commands disarmed
    assert "\\n::stop-commands::deadbeef\\r  ::add-mask::hunter2 #\\u0023[error]pwned" in result.out + result.err


def test_lint_json_keeps_the_value_exactly_and_runs_no_command(hostile_spec: Path) -> None:
    result = run_process("lint", "--format", "json", str(hostile_spec))
    assert result.code == 2, result
    assert_no_command(result)
    (finding,) = json.loads(result.out)["files"][0]["errors"]
    assert "::stop-commands::deadbeef\\r  ::add-mask::hunter2 ##[error]pwned" in finding["message"]


@pytest.mark.parametrize("value", [f"x{brk}{command}" for brk in ("\n", "\r", "\n ") for command in COMMANDS[:3]]
                         + ["##[error]pwned.yaml"])
def test_errors_naming_a_hostile_file_run_no_workflow_command(tmp_path: Path, value: str) -> None:
    result = run_process("lint", str(tmp_path / value))
    assert result.code == 2, result
    # lint's one line per problem: the name's line break is a space (oneline), the line starts with the name
    assert result.err == "" and result.out.startswith(f"{tmp_path}/x " if value.startswith("x") else str(tmp_path))
    assert len(result.out.splitlines()) == 2 and ": error [input] " in result.out, result.out
    assert_no_command(result)


def test_argparse_errors_run_no_workflow_command() -> None:
    result = run_process("schema", "x\n::add-mask::hunter2")
    assert result.code == 2, result
    assert "invalid choice" in result.err
    assert_no_command(result)


# ------------------------------------------------------------------------------------------ commit messages

def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout


@pytest.fixture
def gitops(tmp_path: Path) -> Path:
    """A repository with one committed ClusterSpec whose file name carries a line break and trailers."""
    repo = tmp_path / "gitops"
    (repo / "clusters").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    spec = repo / "clusters" / "a\nSigned-off-by: Mallory <m@evil.example>\n---\nCo-authored-by: M <m@x>.yaml"
    result = run_process("spec", "init", "--service", "eks", "--accelerator", "h100", "--intent", "inference",
                         "--os", "ubuntu", "-o", str(spec))
    assert result.code == 0, result
    spec.write_text(spec.read_text().replace("https://replace-me.invalid/your-org/gitops.git",
                                             "https://github.com/example/gitops.git"))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "spec")
    return repo


@pytest.mark.skipif(shutil.which("git") is None, reason="git is required")
def test_sync_commit_trailers_are_only_aicr_gens(gitops: Path) -> None:
    (spec,) = (gitops / "clusters").iterdir()
    title = "sync\n\nSigned-off-by: Mallory <m@evil.example>\r\nCo-authored-by: Eve <e@evil.example>\n::error::x"
    result = run_process("sync", str(spec), "--repo", str(gitops), "--message", title, env=GIT_ENV)
    assert result.code == 0, result
    assert_no_command(result)
    body = _git(gitops, "log", "-1", "--format=%B")
    parsed = subprocess.run(["git", "interpret-trailers", "--parse"], input=body, capture_output=True, text=True,
                            check=True).stdout
    assert [line.split(":")[0] for line in parsed.splitlines()] == ["Aicr-Gen-Recipe-Digest", "Aicr-Gen-Version"]
    assert _git(gitops, "log", "-1", "--format=%(trailers:key=Signed-off-by)").strip() == ""
    subject = body.split("\n")[0]
    assert subject.startswith("sync Signed-off-by: Mallory") and "::error::x" in subject  # one line, as given
    assert "\r" not in body
    # the spec's name, in the inputs committed, stays on its line
    assert "clusters/a Signed-off-by: Mallory <m@evil.example> --- Co-authored-by: M <m@x>.yaml" in body
    assert _git(gitops, "status", "--porcelain") == ""


@pytest.mark.skipif(shutil.which("git") is None, reason="git is required")
def test_a_title_hiding_the_trailers_is_refused(gitops: Path) -> None:
    (spec,) = (gitops / "clusters").iterdir()
    head = _git(gitops, "rev-parse", "HEAD")
    result = run_process("sync", str(spec), "--repo", str(gitops), "--message", "--- see below", env=GIT_ENV)
    assert result.code == 2, result
    assert "hides its trailers from git" in result.err and result.err.startswith("aicr-gen: error: --message")
    assert _git(gitops, "rev-parse", "HEAD") == head
    assert _git(gitops, "status", "--porcelain") == ""


# ------------------------------------------------------------------------------------------------- Markdown

MARKDOWN = ["@octocat", "@github/security-team", "cc @octo-org/admins please", "fixes #1 and octo/repo#2",
            "[click](https://evil.example)", "![x](https://evil.example/pixel.png)", "<img src=x onerror=alert(1)>",
            "<details><summary>hi</summary>", "<!-- hidden -->", "<https://evil.example>", "a | b | c",
            "`code` ``x``", "**bold** _em_ ~~gone~~", "# heading", "> quote", "- item", "1. item",
            "line\n\n# new block", "x\r\n<script>alert(1)</script>", "[a]: https://evil.example", "&lt;b&gt; &#64;x",
            "\\[escaped\\]", "[ ] task", "\u202eevil"]
MENTION = re.compile(r"(?<![A-Za-z0-9_])[@#][A-Za-z0-9]")
"""What GitHub would read as a mention or an issue reference in rendered text."""


def _renderer() -> Any:
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py (the test extra) renders CommonMark")
    return markdown_it.MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def _tokens(text: str) -> Iterator[Any]:
    for token in _renderer().parse(text):
        yield token
        yield from token.children or []


def _rendered_text(text: str) -> str:
    """The text GitHub's mention and reference filters read: every text token (code excluded)."""
    return " ".join(token.content for token in _tokens(text) if token.type == "text")


def _structure(text: str) -> list[str]:
    """The document's tokens but its text: what a value must not change."""
    return [token.type for token in _tokens(text) if token.type not in ("text", "softbreak")]


def _assert_same_document(hostile: str, benign: str) -> None:
    """``hostile`` (a writer's output with hostile values) is the document ``benign`` (the same with plain
    values) is: no block, cell, HTML, link or emphasis more or less; and no mention or reference is rendered."""
    assert _structure(hostile) == _structure(benign), hostile
    assert not MENTION.search(_rendered_text(hostile)), _rendered_text(hostile)
    assert "\r" not in hostile


def _assert_inert(text: str, *, html_blocks: int = 0) -> None:
    """``text`` renders no HTML, link, image, emphasis, heading, quote or list but our own (``html_blocks`` of
    ours), and no mention or reference."""
    types = [token.type for token in _tokens(text)]
    assert types.count("html_block") == html_blocks and "html_inline" not in types, types
    for kind in ("link_open", "image", "em_open", "s_open", "blockquote_open", "heading_open", "bullet_list_open",
                 "ordered_list_open"):
        assert kind not in types, (kind, text)
    assert not MENTION.search(_rendered_text(text)), _rendered_text(text)
    assert "\r" not in text and "\u202e" not in text


@pytest.mark.parametrize("value", MARKDOWN)
def test_a_value_renders_as_itself_as_text(value: str) -> None:
    escaped = markdown.text(value)
    assert "\n" not in escaped
    _assert_inert(escaped)
    shown = _rendered_text(escaped).replace("\u200b", "")
    assert shown == " ".join(value.replace("\u202e", " ").split())


@pytest.mark.parametrize("value", MARKDOWN)
def test_a_value_renders_as_itself_as_code_and_in_a_table(value: str) -> None:
    row = f"| {markdown.text(value, mid_line=True)} | {markdown.code(value, cell=True)} |"
    table = "\n".join(["| text | code |", "| --- | --- |", row])
    tokens = list(_tokens(table))
    assert [token.type for token in tokens].count("td_open") == 2  # the value did not split or end the row
    (code,) = [token.content for token in tokens if token.type == "code_inline"]
    assert code == " ".join(value.replace("\u202e", " ").split())
    _assert_inert(table)


@pytest.mark.parametrize("value", MARKDOWN)
def test_a_value_renders_as_itself_in_raw_html_and_a_code_block(value: str) -> None:
    import html

    escaped = markdown.html(value)
    assert "<" not in escaped and "\n" not in escaped
    assert not MENTION.search(html.unescape(escaped)) and html.unescape(escaped).replace("\u200b", "") == " ".join(
        value.replace("\u202e", " ").split())
    fenced = "\n".join(markdown.block(["before", value, "```", "after"]))
    tokens = list(_tokens(fenced))
    assert [token.type for token in tokens] == ["fence"], tokens
    assert tokens[0].content.splitlines()[2] == "```"


HOSTILE_MD = "@octocat [x](https://evil.example) ![i](https://evil.example/p.png) <img src=x> <!-- c --> | `a` #1"


def _fleet_document(value: str) -> dict[str, Any]:
    refs = [{"name": f"gpu-operator{value}", "version": "v1", "namespace": "gpu-operator"}]
    clusters = [fleet.Cluster(f"a{value}", "a.yaml", "cm://ns/a", refs,
                              {f"gpu-operator{value}": {"version": f"v2\n::error::x {value}",
                                                       "namespace": "gpu-operator"},
                               f"other{value}": {"version": "1"}}),
                fleet.Cluster(f"b{value}", "b.yaml", f"cm://ns/b{value}", refs, None,
                              error=f"connection refused\n\n# {value}")]
    return fleet.matrix(clusters)


def test_the_fleet_drift_job_summary_is_inert() -> None:
    text = fleet_format.markdown(_fleet_document(HOSTILE_MD))
    _assert_same_document(text, fleet_format.markdown(_fleet_document(" plain")))
    assert [token.type for token in _tokens(text)].count("td_open") == 2 * 4  # 2 clusters x 4 columns
    assert "<img src=x>" in _rendered_text(text) and "[x](https://evil.example)" in _rendered_text(text)


def _drift_result(value: str) -> dict[str, Any]:
    return {"baselineSource": f"golden{value}", "targetSource": f"cm://ns/x{value}",
            "summary": {"total": 1, "added": 0, "removed": 0, "modified": 1},
            "changes": [{"kind": "modified", "path": f"K8s.helm.{value}", "baseline": f"v1\n# {value}",
                         "target": None}]}


def test_the_drift_report_is_inert() -> None:
    text = drift_report.markdown(_drift_result(HOSTILE_MD))
    _assert_same_document(text, drift_report.markdown(_drift_result(" plain")))
    assert "<nil>" in _rendered_text(text)  # was raw HTML: a tag GitHub drops


def _cluster_plan(name: str, hostile: str) -> ClusterPlan:
    return ClusterPlan.model_validate({
        "name": name, "spec": f"clusters/{name}.yaml", "path": f"clusters/{hostile}", "new": False, "changed": True,
        "highRisk": [{"category": "gpu-driver", "text": f"driver {hostile}"}],
        "components": [{"name": "gpu-operator", "change": "bumped", "oldVersion": "v1", "newVersion": f"v2{hostile}",
                        "details": [], "text": f"bumped gpu-operator v1 -> v2 {hostile}"}],
        "values": [{"component": "gpu-operator", "path": "a", "change": "changed", "old": "1", "new": hostile,
                    "redacted": False, "text": f"gpu-operator: a 1 -> {hostile}\n```\n@octocat"}],
        "constraints": [], "sentinel": [f"mode {hostile}"], "certification": [],
        "policies": [{"policy": "p", "severity": "error", "path": f"spec.{hostile}", "message": hostile}],
        "files": {"added": [f"x{hostile}.yaml"], "changed": [], "removed": []}, "onMerge": []})


def _plan_markdown(value: str) -> str:
    return plan_format.markdown(plan(f"main{value}", "0" * 40, [_cluster_plan("a", value), _cluster_plan("b", value)]))


def test_the_plan_comment_is_inert() -> None:
    import html

    hostile = f"{HOSTILE_MD} </details> <details open>\n\n## injected\n[a]: https://evil.example"
    text = _plan_markdown(hostile)
    _assert_same_document(text, _plan_markdown(" plain"))
    summaries = [token.content for token in _tokens(text)
                 if token.type == "html_block" and "<summary>" in token.content]
    assert len(summaries) == 2
    for summary in summaries:  # raw HTML, where GitHub still finds mentions: escaped, mentions broken
        assert summary.count("<") == summary.count(">") == 7  # <details><summary><b></b> <code></code>: ours
        assert "&lt;img src=x&gt;" in summary and "&lt;/details&gt;" in summary
        assert not MENTION.search(html.unescape(re.sub(r"<code>.*?</code>", "", summary)))


# --------------------------------------------------------------------------------------- the plan comment

def _comment_env(url: str, tmp_path: Path, plan_text: str) -> dict[str, str]:
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    plan_file = tmp_path / "plan.md"
    plan_file.write_text(plan_text)
    env = {"GH_TOKEN": "test-token", "PLAN_FILE": str(plan_file), "API_URL": url, "REPOSITORY": "octo/gitops",
           "PR_NUMBER": "7", "RUNNER_TEMP": str(temp), "GRAPHQL_URL": f"{url}/graphql", "NO_PROXY": "127.0.0.1",
           "no_proxy": "127.0.0.1"}
    env.update(dict.fromkeys(("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"), ""))
    return env


@pytest.fixture
def github_api() -> Iterator[tuple[str, type[_FakeGitHub]]]:
    with fake_github() as api:
        yield api


needs_curl = pytest.mark.skipif(shutil.which("curl") is None or shutil.which("jq") is None,
                                reason="curl and jq are required")


@needs_curl
@pytest.mark.parametrize("viewer", ["github-actions[bot]", "octocat"])
def test_the_action_edits_only_its_own_marked_comment(tmp_path: Path, github_api: tuple[str, type[_FakeGitHub]],
                                                      viewer: str) -> None:
    url, server = github_api
    server.viewer = viewer
    forged = [{"id": 1, "body": f"{MARKER}\nforged by mallory", "user": {"login": "mallory", "type": "User"}},
              {"id": 2, "body": f"{MARKER}\nanother bot", "user": {"login": "other-app[bot]", "type": "Bot"}},
              {"id": 3, "body": None, "user": {"login": viewer, "type": "Bot"}},
              {"id": 4, "body": f"quoting {MARKER}", "user": {"login": viewer, "type": "Bot"}}]
    server.comments[:4] = forged
    proc = _run_step(COMMENT_STEP, _comment_env(url, tmp_path, "## aicr-gen plan\n\nfirst\n"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "commented the plan on pull request 7" in proc.stdout
    assert server.comments[:4] == forged  # untouched
    ours = [item for item in server.comments if item["user"]["login"] == viewer and item["id"] > 100]
    assert len(ours) == 1 and ours[0]["body"] == f"{MARKER}\n## aicr-gen plan\n\nfirst\n"

    proc = _run_step(COMMENT_STEP, _comment_env(url, tmp_path, "## aicr-gen plan\n\nsecond\n"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"updated the plan comment {ours[0]['id']} on pull request 7" in proc.stdout
    assert ours[0]["body"].endswith("second\n") and server.comments[:4] == forged
    edits = [path for method, path, _headers, _data in server.requests if method == "PATCH"]
    assert edits == [f"/repos/octo/gitops/issues/comments/{ours[0]['id']}"]


@needs_curl
def test_the_action_writes_no_comment_when_it_cannot_tell_who_it_is(tmp_path: Path,
                                                                     github_api: tuple[str, type[_FakeGitHub]]) -> None:
    url, server = github_api
    server.viewer = ""  # GraphQL answers without a login
    server.comments[0] = {"id": 1, "body": f"{MARKER}\nforged", "user": {"login": "mallory", "type": "User"}}
    proc = _run_step(COMMENT_STEP, _comment_env(url, tmp_path, "plan\n"), tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "::error::the token's identity is unknown" in proc.stdout
    assert [method for method, _path, _headers, _data in server.requests] == ["POST"]  # the GraphQL query only
    assert server.comments[0]["body"] == f"{MARKER}\nforged"


def test_the_action_annotates_a_hostile_spec_file_name_as_one_escaped_command(tmp_path: Path) -> None:
    """The sync-check step's own ``::error`` annotation names the spec: a file name a pull request chose cannot
    add properties, lines or commands to it (actions/toolkit's escapeProperty and escapeData)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "aicr-gen"
    fake.write_text("#!/bin/sh\nexit 1\n")  # a stale tree
    fake.chmod(0o755)
    name = "a,title=forged::x%0A::add-mask::y\r::warning::z.yaml"
    env = {"SPEC_FILES": name, "REPO": ".", "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = _run_step("Check rendered trees are in sync", env, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    (line,) = [line for line in _RUNNER_LINE.split(result.stdout) if line.lstrip().startswith("::")]
    assert line.startswith("::error file=a%2Ctitle=forged%3A%3Ax%250A%3A%3Aadd-mask%3A%3Ay%0D%3A%3Awarning"
                           "%3A%3Az.yaml::the tree rendered from "), line
