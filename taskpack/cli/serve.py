"""`taskpack serve`: the task server, the viewer and the mirror."""

from __future__ import annotations

import contextlib

import click

from taskpack.cli._common import _user_errors, registry_option


@click.command()
@click.argument("target", required=False)
@registry_option
@click.option(
    "--mirror",
    metavar="REGISTRY",
    help="Serve a pull-through mirror of REGISTRY (instead of a TARGET): clients use "
    "--registry http://HOST:PORT, and each object is fetched from REGISTRY once.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (0: any free port).",
)
@click.option("--workers", default=1, show_default=True, help="Processes serving (2 on 2 cores).")
@click.option(
    "--allow-host", multiple=True, help="Another name clients reach this server by (Host)."
)
@click.option(
    "--ttl",
    default=10.0,
    show_default=True,
    help="Mirror: seconds a listing or tag is reused before upstream is asked again.",
)
@click.option(
    "--deadline",
    default=120.0,
    show_default=True,
    type=click.FloatRange(1, 3600),
    help="Seconds a task list, search or diff may take before it is stopped (503).",
)
@click.option(
    "--max-rss",
    default=2048,
    show_default=True,
    type=click.IntRange(128),
    help="MiB a worker may hold; past it the worker is replaced.",
)
@click.option(
    "--tool-name",
    default="answer",
    show_default=True,
    help="The name of the one tool an ORS episode offers (ORS leaves tool names to the "
    "environment: ors-sdk's own examples call it `submit`).",
)
@_user_errors
def serve(
    target: str | None,
    registry: str | None,
    mirror: str | None,
    host: str,
    port: int,
    workers: int,
    allow_host: tuple[str, ...],
    ttl: float,
    deadline: float,
    max_rss: int,
    tool_name: str,
) -> None:
    """Serve one version (a folder or NAME@VERSION) over HTTP: a JSON API with an OpenAPI
    document at /openapi.json, and a read-only HTML view at /. Without a TARGET, serve the
    registry's catalog (every set, searchable, each with its versions and their results) and
    its versions, which clients may pull through it. With --mirror, the same for another
    registry, for a cluster's nodes to share one fetch. A worker that dies is replaced."""
    from taskpack.base.settings import default_registry
    from taskpack.errors import require

    if target is not None and mirror is not None:
        raise click.UsageError("give a TARGET to serve, or --mirror REGISTRY, not both")
    if target is None and mirror is None:
        mirror = registry or default_registry()
    if workers < 1:
        raise click.BadParameter("at least 1", param_hint="--workers")
    for module in ("uvicorn", "httptools", "markdown_it"):  # before the server's modules do
        require(module, "serve")
    from taskpack.serve.app import Config, address, allowed_hosts, run

    ip, port = address(host, port)
    hosts = allowed_hosts(host, port, allow_host)
    config = Config(
        target=target,
        registry=registry,
        mirror=mirror,
        ttl=ttl,
        hosts=tuple(sorted(hosts)) if hosts is not None else None,
        deadline=deadline,
        max_rss=max_rss,
        tool_name=tool_name,
    )
    app = config.app()  # opens the version (or the upstream) here: errors are one line
    shown = f"[{host}]" if ":" in host else host
    if app.api is not None:
        m = app.api.catalog.ts.manifest
        click.echo(f"serving {m.ref} ({m.digest}) on http://{shown}:{port}/", err=True)
    else:
        click.echo(f"serving the catalog of {mirror} on http://{shown}:{port}/", err=True)
    with contextlib.suppress(KeyboardInterrupt):
        run(config, ip, port, workers)
