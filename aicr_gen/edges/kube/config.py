"""Which API server, with which credentials: the user's kubeconfig or the pod's service account, loaded by the
official client into a ``kubernetes.client.Configuration``.

- ``--kubeconfig FILE`` alone; else the files of ``$KUBECONFIG``, merged by the official client (the first file to
  define a cluster, user or context wins); else ``~/.kube/config``; else, when ``KUBERNETES_SERVICE_HOST`` is set
  (in a pod, e.g. a snapshot CronJob), the in-cluster service account.
- ``--context NAME``, else the ``current-context`` of the first file that sets one, as kubectl does (the client
  itself would take the last).
- Every credential the client supports: token, tokenFile, client certificate and key (files or data), basic
  auth, ``exec`` plugins (given ``KUBERNETES_EXEC_INFO``; a relative command runs from the kubeconfig's folder)
  and ``auth-provider`` (oidc with refresh, gcp); ``proxy-url``, ``tls-server-name``, ``insecure-skip-tls-verify``.
  A refreshed token is not written back: aicr-gen never edits a kubeconfig.

Refused with exit 2: a credential for a plain ``http://`` server, where it would travel in clear text (an
``http://`` server without credentials, such as ``kubectl proxy``, is fine).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aicr_gen.errors import InvalidInputError, UnreachableError

if TYPE_CHECKING:
    from kubernetes.client import Configuration

IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


@dataclass(frozen=True)
class Target:
    """A loaded client configuration and who it speaks as (for messages)."""

    configuration: Configuration
    identity: str


class _Logged(logging.Handler):
    """Collects the errors the client logs instead of raising (a failed ``exec`` plugin), in this thread only:
    ``diff --fleet`` loads several contexts at once, and one cluster's failed plugin is not another's."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []
        self.thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.messages.append(" ".join(record.getMessage().split()))


def kubeconfig_paths(kubeconfig: str | None) -> list[Path]:
    """The kubeconfig files to read, in precedence order."""
    if kubeconfig:
        return [Path(kubeconfig).expanduser()]
    listed = [Path(part).expanduser() for part in os.environ.get("KUBECONFIG", "").split(os.pathsep) if part]
    return listed or [Path.home() / ".kube" / "config"]


def load(kubeconfig: str | None, context: str | None) -> Target:
    """The configuration for ``context`` of the kubeconfig (see the module docstring for which one)."""
    from kubernetes.client import Configuration

    given = Path(kubeconfig).expanduser() if kubeconfig else None
    if given is not None and (not given.exists() or given.is_dir()):  # a pipe (--kubeconfig <(...)) is fine
        raise InvalidInputError(f"--kubeconfig {kubeconfig}: file not found; give a kubeconfig file")
    paths = kubeconfig_paths(kubeconfig)
    found = [path for path in paths if path.exists()]
    configuration = Configuration()
    if not found:
        tried = ", ".join(str(path) for path in paths)
        if os.environ.get(IN_CLUSTER_ENV) and context is None:
            return _in_cluster(configuration, tried)
        raise UnreachableError(f"no kubeconfig found (tried {tried}); set KUBECONFIG or pass --kubeconfig")
    where = ", ".join(str(path) for path in found)
    target = _from_kubeconfig(found, context, configuration, where)
    host = configuration.host
    if not host.startswith(("https://", "http://")):
        raise InvalidInputError(f"{where}: the cluster of {target.identity} has no http(s) server URL; set "
                                "clusters[].cluster.server")
    if host.startswith("http://") and configuration.api_key:
        raise InvalidInputError(f"{where}: {target.identity} has credentials but the server {host} is plain http, "
                                "which would send them in clear text; use the API server's https:// address")
    return target


def _in_cluster(configuration: Configuration, tried: str) -> Target:
    from kubernetes.config import ConfigException, load_incluster_config

    try:
        load_incluster_config(client_configuration=configuration)
    except (ConfigException, OSError) as err:
        raise UnreachableError(f"in-cluster config ({IN_CLUSTER_ENV} is set, no kubeconfig at {tried}): {err}; "
                               "mount the pod's service account token or pass --kubeconfig") from None
    return Target(configuration, "the pod's service account")


def _from_kubeconfig(paths: list[Path], context: str | None, configuration: Configuration, where: str) -> Target:
    from kubernetes.config import ConfigException
    from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger

    from aicr_gen.yaml.foreign import YAMLError

    # A hand-written kubeconfig can break the client in many ways (a list where a mapping belongs, an entry
    # without a name, bad base64): each is a bad input, reported in one line.
    unusable = (ConfigException, YAMLError, OSError, LookupError, TypeError, ValueError, AttributeError)
    try:
        merger = KubeConfigMerger(os.pathsep.join(str(path) for path in paths))
        names = [str(entry["name"]) for entry in merger.config.value["contexts"]]
    except unusable as err:
        raise InvalidInputError(f"{where}: not a usable kubeconfig: {_one_line(err)}; check it with kubectl "
                                "config view") from None
    chosen = context or next((str(config["current-context"]) for config in merger.config_files.values()
                              if isinstance(config, dict) and config.get("current-context")), "")
    listed = ", ".join(names) or "none"
    if not chosen:
        raise InvalidInputError(f"{where}: no current-context; pass --context NAME (contexts: {listed})")
    if chosen not in names:
        raise InvalidInputError(f"{where}: context {chosen!r} is not defined (contexts: {listed}); pass --context "
                                "with one of them")
    logged = _Logged()
    logging.getLogger().addHandler(logged)
    configuration.host = ""
    try:
        loader = KubeConfigLoader(config_dict=merger.config, active_context=chosen, config_base_path=None)
        loader.load_and_set(configuration)
        user = loader.current_context["context"].get("user")
    except unusable as err:
        raise InvalidInputError(f"{where}: context {chosen!r} cannot be used: {_one_line(err)}") from None
    finally:
        logging.getLogger().removeHandler(logged)
    identity = f"context {chosen!r} (user {user!r})"
    if logged.messages:
        raise UnreachableError(f"{where}: the credential plugin of {identity} failed: {logged.messages[0]}; "
                               "fix it or log in again")
    return Target(configuration, identity)


def _one_line(err: BaseException) -> str:
    """The client's message in one line, without the kubeconfig entries it quotes (they may hold tokens)."""
    return re.sub(r"/?\{.*\}", "", " ".join(str(err).split())) or type(err).__name__
