"""``bundle --recipe https://...`` (AICR reads a recipe from a URL too): fetched through the hardened transport
from a real loopback server, and refused or cut off as it should be when the server lies, stalls, redirects
elsewhere or serves too much."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.catalog import recipe_file
from aicr_gen.edges import transport
from tests.hostile.test_publish import Seen, Server, servers  # noqa: F401  (the loopback server fixture)


@pytest.fixture
def small(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, list[str]]:
    """The small recipe's bytes and its catalog arguments; short limits for a fast suite."""
    from tests.bundles import write_recipe

    found = write_recipe(cli, "small", tmp_path / "recipe")
    monkeypatch.setattr(recipe_file, "URL_DEADLINE", 3.0)
    monkeypatch.setattr(transport, "READ_TIMEOUT", 1.0)
    return found.file.read_bytes(), list(found.catalog)


def test_a_recipe_url_bundles_as_the_file_does(cli: Any, small: tuple[bytes, list[str]], tmp_path: Path,
                                              servers: Callable[..., Server]) -> None:  # noqa: F811
    raw, catalog = small
    site = servers(lambda _: (200, {"Content-Type": "application/yaml"}, raw))
    from_url = cli("bundle", "-r", f"{site.url}/recipes/gpu.yaml", *catalog, "-o", str(tmp_path / "a"))
    assert from_url.code == 0, from_url.err
    (tmp_path / "r.yaml").write_bytes(raw)
    from_file = cli("bundle", "-r", str(tmp_path / "r.yaml"), *catalog, "-o", str(tmp_path / "b"))
    assert from_file.code == 0, from_file.err
    assert (tmp_path / "a" / "recipe.yaml").read_bytes() == (tmp_path / "b" / "recipe.yaml").read_bytes()
    assert [seen.path for seen in site.seen] == ["/recipes/gpu.yaml"]


@pytest.mark.parametrize(("answer", "code", "says"), [
    ((404, {}, b""), 2, "not found (404)"),
    ((500, {}, b"boom"), 3, "answered 500"),
    ((200, {}, b"x" * (1024 * 1024 + 1)), 3, "over the 1048576-byte limit"),
    ((200, {}, b"kind: Nope\n"), 2, "r.yaml:1: apiVersion is missing"),
])
def test_a_bad_answer_is_one_message(cli: Any, small: tuple[bytes, list[str]], tmp_path: Path, *,
                                     servers: Callable[..., Server],  # noqa: F811
                                     answer: tuple[int, dict[str, str], bytes], code: int, says: str) -> None:
    site = servers(lambda _: answer)
    result = cli("bundle", "-r", f"{site.url}/r.yaml", *small[1], "-o", str(tmp_path / "out"))
    assert result.code == code and says in result.err, result.err
    assert "Traceback" not in result.err and not (tmp_path / "out").exists()


def test_a_redirect_elsewhere_drops_the_credentials_and_plain_http_elsewhere_is_refused(
        cli: Any, small: tuple[bytes, list[str]], tmp_path: Path, servers: Callable[..., Server]) -> None:  # noqa: F811
    raw, catalog = small
    other = servers(lambda _: (200, {}, raw), host="127.0.0.2")
    site = servers(lambda _: (302, {"Location": f"{other.url}/r.yaml"}, b""))
    result = cli("bundle", "-r", f"{site.url}/r.yaml", *catalog, "-o", str(tmp_path / "out"))
    assert result.code == 0, result.err
    refused = cli("bundle", "-r", "http://example.com/r.yaml", *catalog, "-o", str(tmp_path / "x"))
    assert refused.code == 2 and "plain http to a host that is not loopback" in refused.err
    with_password = cli("bundle", "-r", f"{site.url.replace('//', '//u:hunter2@')}/r.yaml", *catalog, "-o",
                        str(tmp_path / "y"))
    assert with_password.code == 2 and "hunter2" not in with_password.err


def test_a_server_that_stalls_is_cut_off_at_the_deadline(cli: Any, small: tuple[bytes, list[str]], tmp_path: Path,
                                                        servers: Callable[..., Server]) -> None:  # noqa: F811
    import threading

    release = threading.Event()

    def stall(_: Seen) -> tuple[int, dict[str, str], bytes]:
        release.wait(10)
        return 200, {}, b""

    site = servers(stall)
    try:
        result = cli("bundle", "-r", f"{site.url}/r.yaml", *small[1], "-o", str(tmp_path / "out"))
    finally:
        release.set()
    assert result.code == 3 and "timed out" in result.err, result.err
