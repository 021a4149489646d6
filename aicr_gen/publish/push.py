"""Pushing an artifact to an OCI registry, as the OCI distribution spec lays it out (and oras-go, AICR's client,
does it): each blob unless the registry has it (``HEAD /v2/<name>/blobs/<digest>``), uploaded in one piece
(``POST /v2/<name>/blobs/uploads/``, then ``PUT`` to the ``Location`` it answers with ``?digest=``), then the
manifest under the tag (``PUT /v2/<name>/manifests/<tag>``), whose digest the registry must confirm.

Requests go through the registry client (``mirror.registry``, limited to the target's host) with the
repository's ``pull,push`` scope, so they keep its rules: credentials (a docker ``config.json``, or
``AICR_GEN_REGISTRY_USERNAME``/``_PASSWORD``) only when the registry challenges, only to it and its token realm,
never across a redirect to another host; every request bounded in time and size. An upload ``Location`` on
another origin (a registry that hands uploads to its storage) gets no credentials. This module is one of
aicr-gen's IO edges.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import TYPE_CHECKING

from aicr_gen.errors import InvalidInputError, UnreachableError

if TYPE_CHECKING:
    from aicr_gen.edges.registry import Client
    from aicr_gen.publish.artifact import Artifact, Blob
    from aicr_gen.publish.target import Target


def client(target: Target, *, plain_http: bool, insecure_tls: bool) -> Client:
    """The client ``bundle --output oci://`` pushes with, limited to the target's registry: HTTPS unless
    ``plain_http`` (a loopback registry too, as AICR), the docker config's credentials
    (``$DOCKER_CONFIG/config.json`` or ``~/.docker/config.json``), else the environment's."""
    from aicr_gen.edges import registry
    default = None
    username = os.environ.get(registry.USER_ENV)
    if username:
        password = os.environ.get(registry.PASSWORD_ENV)
        if password is None:
            raise InvalidInputError(f"{registry.USER_ENV} is set without {registry.PASSWORD_ENV}; set both or "
                                    "neither")
        default = registry.credentials(username, password, f"{registry.USER_ENV}/{registry.PASSWORD_ENV}")
    found = registry.Client(credentials=registry.docker_config(), default=default, insecure=plain_http,
                            loopback_http=False, insecure_tls=insecure_tls)
    return found.only({target.registry})


def _blob(registry: Client, target: Target, blob: Blob) -> None:
    host, name = target.registry, target.repository
    if registry.push("HEAD", host, name, f"blobs/{blob.digest}").status == 200:
        return
    started = registry.push("POST", host, name, "blobs/uploads/", b"")
    location = started.headers.get("Location", "")
    if started.status != 202 or not location:
        raise UnreachableError(f"registry {host}: starting an upload to {name} answered {started.status}"
                               + ("" if location else " without a Location"))
    url = urllib.parse.urljoin(started.url, location.strip())
    url += ("&" if "?" in url else "?") + urllib.parse.urlencode({"digest": blob.digest})
    done = registry.push("PUT", host, name, url, blob.data, content_type="application/octet-stream")
    if done.status != 201:
        raise UnreachableError(f"registry {host}: uploading {blob.digest} to {name} answered {done.status}")


def push(registry: Client, target: Target, artifact: Artifact) -> str:
    """Push ``artifact`` to ``target``; its manifest digest, as the registry confirmed it."""
    from aicr_gen.publish.artifact import MANIFEST

    for blob in artifact.blobs:
        _blob(registry, target, blob)
    host, name = target.registry, target.repository
    answer = registry.push("PUT", host, name, f"manifests/{target.tag}", artifact.manifest,
                           content_type=MANIFEST)
    if answer.status != 201:
        raise UnreachableError(f"registry {host}: storing the manifest of {name}:{target.tag} answered "
                               f"{answer.status}")
    confirmed = answer.headers.get("Docker-Content-Digest", artifact.digest)
    if confirmed != artifact.digest:
        raise UnreachableError(f"registry {host}: stored {name}:{target.tag} as {confirmed}, not the pushed "
                               f"{artifact.digest}")
    return artifact.digest
