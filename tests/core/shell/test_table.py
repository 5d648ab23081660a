"""Table-driven cases for reading shell lines: every rule of issue 3, sections 1-7."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from corral.core.shell.plan import Decision, LiveJob, PortHolder, decide

CWD = "/w/proj"
HOME = "/home/u"
TOKEN = "ab" * 16
UNSET = object()


@dataclass(frozen=True)
class Case:
    line: str
    action: str = "wrap"
    mode: str | object | None = UNSET  # UNSET: "task" when wrapped, else None
    bg: bool = False
    cwd: str | None = None  # the first job's folder
    port: int | object | None = UNSET  # the first job's port
    readable: bool = True
    jobs: int | None = None


def W(line: str, **kw: Any) -> Case:  # wrapped in task mode
    return Case(line, "wrap", **kw)


def D(line: str, **kw: Any) -> Case:  # wrapped, detached (trailing &)
    return Case(line, "wrap", mode="detached", **kw)


def I(line: str, **kw: Any) -> Case:  # noqa: E743 - backgrounded mid-line, rewritten in place
    return Case(line, "wrap", mode="in-place", **kw)


def U(line: str, **kw: Any) -> Case:  # untouched, readable
    return Case(line, "untouched", **kw)


def X(line: str, **kw: Any) -> Case:  # unreadable: untouched, never rewritten
    return Case(line, "untouched", readable=False, **kw)


def R(line: str, **kw: Any) -> Case:  # refused
    return Case(line, "refuse", **kw)


# 1. Readable or not
READABLE = [
    X("node app.js & &"),
    X("npm run dev &&"),
    X("; npm run dev &"),
    X("npm run dev ;; vite"),
    X("npm run dev | "),
    X("npm run dev # start it"),
    X("npm run dev \\\n --port 3000"),
    X("npm run d\\ev"),
    X('npm run dev -- --name "a \\"b\\""'),
    X("npm run dev -- --name $'x'"),
    X("set''sid npm run dev"),
    X('"set"sid npm run dev'),
    X("npm run 'de'v"),
    W('vite --port="5173"', port=5173),
    W("vite --port='5174'", port=5174),
    X("(cd web && npm run dev)"),
    X("{ npm run dev; }"),
    X("npm run dev -- --name $(whoami)"),
    X("npm run dev -- --name `whoami`"),
    X("npm run dev <<EOF\nx\nEOF"),
    X("if true; then npm run dev; fi"),
    X("for i in 1 2; do npm run dev; done"),
    X("while true; do vite; done"),
    X("case x in x) vite;; esac"),
    X("exec npm run dev"),
    X("eval npm run dev"),
    X("source env.sh && npm run dev"),
    X(". env.sh && npm run dev"),
    X("cd - && npm run dev"),
    X("pushd +1 && npm run dev"),
    X("$RUNNER run dev"),
    X("${PM} run dev"),
    X("setsid npm run dev"),
    X("/usr/bin/setsid vite &"),
    X('bash -c "setsid vite"'),
    X("bash -c 'setsid vite'"),
    X("nohup setsid vite &"),
    W("echo 'setsid' && vite"),
    X("npm run dev -- {a,b}"),
    X("npm run dev\r"),
    X("vite\x00"),
    X("! vite"),
    X("[[ -f x ]] && vite"),
    X("vite <<< input"),
    X("f() { vite; }; f"),
    X("cd $DIR && npm run dev"),
    X("cd ~bob/web && vite"),
    X("popd && vite"),
    X("env -C $DIR vite"),
    U("ls -la"),
    U("git status && git diff"),
    U("echo 'it''s'", readable=False),
    U("grep -r foo src | head -5"),
    U("ls >| out.txt"),
    U("cat a.txt | wc -l; echo done"),
    U('echo "hello world"'),
    U("python -c 'print(1)'"),
    U("npm test"),
    U("npm install && npm run build"),
    U("cd web"),
    U("ls # comment", readable=False),
    U("echo $HOME", readable=False),
    U(""),
]

# 2. Long runner or not
RUNNERS = [
    W("npm run dev"),
    W("npm run start"),
    W("npm start"),
    W("npm run serve"),
    W("npm run watch"),
    W("npm run preview"),
    W("npm run storybook"),
    W("npm run dev:web"),
    W("npm run start:prod"),
    W("npm run-script dev"),
    W("pnpm dev"),
    W("pnpm run dev"),
    W("pnpm start"),
    W("yarn dev"),
    W("yarn run watch"),
    W("yarn start"),
    W("bun run dev"),
    W("bun dev"),
    W("deno task dev"),
    W("yarn workspace web dev"),
    W("pnpm --filter web dev"),
    W("npm -w web run dev"),
    U("npm test"),
    U("npm run start-db"),
    U("npm run storybook-build"),
    U("npm run build"),
    U("npm run lint"),
    U("yarn build"),
    U("pnpm install"),
    U("npm run dev:"),
    U("npm run"),
    U("npx --yes vite build"),
    U("vite build"),
    U("npm ci"),
    U("yarn"),
    W("vite", port=5173),
    W("vite dev", port=5173),
    W("vite preview", port=4173),
    W("npx vite", port=5173),
    W("npx --yes vite", port=5173),
    W("npx -y vite --host", port=5173),
    W("bunx vite", port=5173),
    W("pnpm exec next dev", port=3000),
    W("pnpm dlx vite", port=5173),
    W("npm exec -- vite", port=5173),
    W("yarn dlx vite", port=5173),
    W("bun x vite", port=5173),
    W("./node_modules/.bin/vite", port=5173),
    W("pnpm vite", port=5173),
    W("next dev", port=3000),
    W("next start", port=3000),
    U("next build"),
    U("next lint"),
    W("nuxt dev", port=3000),
    W("nuxi dev", port=3000),
    W("astro dev", port=4321),
    W("remix dev", port=3000),
    W("expo start", port=8081),
    W("metro", port=8081),
    W("react-native start", port=8081),
    W("webpack serve", port=8080),
    U("webpack"),
    U("webpack --mode production"),
    W("tsc -w", port=None),
    W("tsc --watch", port=None),
    W("tsc -b -w"),
    U("tsc"),
    U("tsc -b"),
    W("jest --watch"),
    W("jest --watchAll"),
    U("jest"),
    U("jest --coverage"),
    W("vitest watch"),
    W("vitest --watch"),
    U("vitest run"),
    U("vitest"),
    W("nodemon server.js"),
    W("nodemon"),
    W("rails server", port=3000),
    W("rails s", port=3000),
    W("bin/rails server", port=3000),
    W("bundle exec rails s", port=3000),
    U("rails console"),
    U("rails db:migrate"),
    W("python -m http.server", port=8000),
    W("python3 -m http.server 9000", port=9000),
    W("python3.12 -m http.server", port=8000),
    U("python -m pytest"),
    U("python script.py"),
    W("uvicorn app:app", port=8000),
    W("uv run uvicorn app:app", port=8000),
    W("python -m uvicorn main:app --reload", port=8000),
    W("poetry run uvicorn app:app"),
    W("gunicorn app:app", port=8000),
    W("flask run", port=5000),
    W("flask --app hello run"),
    W("python -m flask run", port=5000),
    U("flask routes"),
    W("python manage.py runserver", port=8000),
    W("./manage.py runserver", port=8000),
    U("python manage.py migrate"),
    W("docker compose up"),
    U("docker compose up -d"),
    U("docker compose up --detach"),
    W("docker-compose up"),
    U("docker-compose up -d"),
    U("docker compose down"),
    W("tilt up", port=10350),
    U("tilt down"),
    W("hugo server", port=1313),
    W("jekyll serve", port=4000),
    W("bundle exec jekyll serve", port=4000),
    W("wrangler dev", port=8787),
    U("wrangler deploy"),
    W("cargo watch -x run"),
    U("cargo build"),
    W("air"),
    W("go run ./cmd/api"),
    W("go run main.go"),
    U("go build ./..."),
    U("go test ./..."),
    W("serve"),
    W("./bin/serve"),
    W("npx serve dist"),
    W("serve -s dist"),
    W("nohup npm run dev"),
    W("time npm run dev"),
    W("env NODE_ENV=dev npm run dev"),
    W("FOO=1 npm run dev"),
    U("command -v vite"),
    W("node --watch server.js"),
    U("node server.js"),
    W("npm run dev > dev.log 2>&1"),
    W("npm run dev | tee dev.log"),
    W("npm install && npm run dev"),
    W("npm run build; npm start"),
]

# 3. The rewrite
REWRITE = [
    W("sleep 100", bg=True, jobs=1),
    W("ls -la", bg=True),
    W("npm run build", bg=True),
    W("npm run dev", bg=True),
    W("npm run dev &", bg=True),
    W("vite & sleep 2 && curl localhost:5173", bg=True),
    D("cd web && npm run dev > dev.log 2>&1 &", cwd=f"{CWD}/web"),
    D("npm run dev &", cwd=CWD),
    D("sleep 100 &"),
    D("python app.py --port 8001 &", port=8001),
    D("nohup vite > vite.log 2>&1 &", port=5173),
    D("vite &  "),
    D("ls >| out & "),
    D("docker run -p 8080:80 nginx &", port=8080),
    I("npm run dev & sleep 2 && curl localhost:5173", jobs=1),
    U("sleep 1 & wait", jobs=0),
    U("a & b &", jobs=0),
    I("vite & true &", jobs=1),
    W("ls >| out.txt && vite"),
    W("vite 2>&1 | tee log"),
]

# 4. Each job's folder
FOLDERS = [
    W("cd web && npm run dev", cwd=f"{CWD}/web"),
    W("cd web; npm run dev", cwd=f"{CWD}/web"),
    W("cd web\nnpm run dev", cwd=f"{CWD}/web"),
    W("cd && npm run dev", cwd=HOME),
    W("cd ~ && npm run dev", cwd=HOME),
    W("cd ~/site && npm run dev", cwd=f"{HOME}/site"),
    W("cd /srv/app && npm run dev", cwd="/srv/app"),
    W("cd .. && npm run dev", cwd="/w"),
    W("cd web/../api && npm run dev", cwd=f"{CWD}/api"),
    W("cd 'my app' && npm run dev", cwd=f"{CWD}/my app"),
    W('cd "my app" && npm run dev', cwd=f"{CWD}/my app"),
    W("cd -P web && npm run dev", cwd=f"{CWD}/web"),
    W("cd -- web && npm run dev", cwd=f"{CWD}/web"),
    W("cd $HOME/x && npm run dev", cwd=f"{HOME}/x"),
    W("cd a && cd b && npm run dev", cwd=f"{CWD}/a/b"),
    W("pushd web && npm run dev", cwd=f"{CWD}/web"),
    W("pushd web && popd && npm run dev", cwd=CWD),
    W("pushd a && pushd b && pushd && npm run dev", cwd=f"{CWD}/a"),
    W("env -C web npm run dev", cwd=f"{CWD}/web"),
    W("env --chdir=web npm run dev", cwd=f"{CWD}/web"),
    W("env --chdir web vite", cwd=f"{CWD}/web"),
    W("cd a && env -C b vite", cwd=f"{CWD}/a/b"),
    W("npm --prefix web run dev", cwd=f"{CWD}/web"),
    W("npm --prefix=web run dev", cwd=f"{CWD}/web"),
    W("pnpm -C web dev", cwd=f"{CWD}/web"),
    W("pnpm --dir web dev", cwd=f"{CWD}/web"),
    W("yarn --cwd web dev", cwd=f"{CWD}/web"),
    W("npm run dev -- --prefix web", cwd=CWD),
    U("cd web & npm run dev", cwd=CWD),
    W("cd web & vite", bg=True, cwd=CWD),
    W("cd web | true; vite", cwd=CWD),
    W("cd web && vite || vite", cwd=f"{CWD}/web"),
    W("cd a; cd b & cd c; vite", bg=True, cwd=f"{CWD}/a/c"),
    D("cd web && vite &", cwd=f"{CWD}/web"),
    X("cd a b && vite"),
    X("pushd && vite"),
]

# 6. Requested port
PORTS = [
    W("vite --port 4000", port=4000),
    W("vite --port=4001", port=4001),
    W("next dev -p 4002", port=4002),
    W("next dev --port 4003", port=4003),
    W("PORT=4004 next dev", port=4004),
    W("PORT=4005 npm run dev", port=4005),
    W("export PORT=4006 && npm run dev", port=4006),
    W("gunicorn -b 0.0.0.0:4007 app:app", port=4007),
    W("gunicorn --bind 127.0.0.1:4008 app:app", port=4008),
    W("gunicorn --bind=:4009 app:app", port=4009),
    W("docker compose up", port=None),
    D("docker run -p 127.0.0.1:4010:80 img &", port=4010),
    D("docker run --publish 4011:80 img &", port=4011),
    D("docker run -p 80 img &", port=None),
    D("ssh -p 2222 host &", port=None),
    W("rails s -p 4012", port=4012),
    W("flask run -p 4013", port=4013),
    W("hugo server -p 4014", port=4014),
    W("jekyll serve -P 4015", port=4015),
    W("uvicorn app:app --port 4016", port=4016),
    W("python -m http.server 4017", port=4017),
    W("python manage.py runserver 4018", port=4018),
    W("python manage.py runserver 0.0.0.0:4019", port=4019),
    W("serve -l 4020", port=4020),
    W("vite --port 0", port=None),  # 0: any free port, not the default
    W("vite --port 99999", port=5173),
    W("npm run dev -- --port 4021", port=4021),
    W("vite -p 4022", port=5173),
    W("npm run dev", port=None),
    W("storybook dev -p 6007", port=6007),
    W("wrangler dev --port 4023", port=4023),
    W("PORT=$P vite", port=5173),
    D("python app.py --port=4024 &", port=4024),
    D("PORT=4025 node server.js &", port=4025),
]


def live_job(**kw: Any) -> LiveJob:
    base = dict(
        id="c0ffee" * 5 + "00",
        pid=4242,
        identity=None,
        cwd=CWD,
        ports=(5173,),
        age_seconds=754.0,
        command="npm run dev",
    )
    base.update(kw)
    return LiveJob(**base)  # type: ignore[arg-type]


def _ident(line: str, cwd: str = CWD) -> str:
    d = decide(line, background=False, cwd=cwd, home=HOME, token=TOKEN)
    assert d.jobs, line
    return d.jobs[0].identity


# 7. Refusals within one line
REFUSALS = [
    R("npm run dev & npm run dev"),
    R("vite & npx vite"),
    R("npm run dev & yarn dev"),
    W("npm run dev || npm run dev"),
    W("npm run dev && npm run dev"),
    W("npm run dev; yarn dev"),
    R("vite | vite"),
    R("npm run dev & sleep 1; pnpm dev --host 0.0.0.0"),
    I("npm run dev & cd web && npm run dev", jobs=2),
    R("vite --port 4000 & next dev -p 4000"),
    I("vite & next dev", jobs=2),
    R("npm run dev & npm run dev", bg=True),
    W("npm run dev:web & npm run dev:api", bg=True),
]

# 8. corral's own `run` (and `restart`) already runs its job under a supervisor: sent to the
# background by the agent's flag or by `&`, it is not wrapped in a second one. corral run
# itself refuses a duplicate or a held port (and honours --force), so nothing is refused here.
SERVER = "python3 -m http.server 8765"
OWN_RUN = [
    *(
        U(line, bg=bg)
        for bg in (False, True)
        for line in (
            f"corral run -d -- {SERVER}",
            f"corral run -- {SERVER}",
            f"/opt/venv/bin/corral run -d --name web --ready port -- {SERVER}",
            f"corral run -d --session s-1 -c '{SERVER}'",
            f"python3 -m corral run -d -- {SERVER}",
            f"/w/.venv/bin/python -I -S -m corral run -d -c '{SERVER}'",
            f"cd web && corral run -d -- {SERVER}",
            f"nohup corral run -d -- {SERVER}",
            "corral restart web",
            "corral run -d -- npm run dev",
        )
    ),
    U(f"corral run -- {SERVER} &"),
    U(f"corral run -d -- {SERVER} &"),
    U(f"corral run -d -- {SERVER} & corral run -d -- vite &"),
    # anything else in the line is still the agent's own: read as before
    W(f"corral run -d -- {SERVER} && npm run dev", bg=True),
    W(f"corral run -d -- {SERVER}; sleep 300", bg=True),
    D("corral ls && sleep 300 &"),
    W("corral ls", bg=True),
    W(f"echo corral run -d -- {SERVER}", bg=True),
    W(f"corralx run -d -- {SERVER}", bg=True),
    W(f"python3 -m corralx run -- {SERVER}", bg=True),
]

ALL = READABLE + RUNNERS + REWRITE + FOLDERS + PORTS + REFUSALS + OWN_RUN


def run(case: Case) -> Decision:
    return decide(case.line, background=case.bg, cwd=CWD, home=HOME, token=TOKEN)


def test_enough_cases() -> None:
    assert len(ALL) >= 150


@pytest.mark.parametrize(
    "case", ALL, ids=[repr(c.line)[:60] + (" bg" if c.bg else "") for c in ALL]
)
def test_case(case: Case) -> None:
    d = run(case)
    assert d.action == case.action, d
    assert d.readable is case.readable, d
    mode = case.mode if case.mode is not UNSET else ("task" if case.action == "wrap" else None)
    assert d.mode == mode, d
    if not d.readable:
        assert d.reason and d.rewritten is None and d.jobs == ()
    if case.cwd is not None:
        assert d.jobs and d.jobs[0].cwd == case.cwd, d
    if case.port is not UNSET:
        assert d.jobs and d.jobs[0].port == case.port, d
    if case.jobs is not None:
        assert len(d.jobs) == case.jobs, d
    if d.action == "wrap":
        assert d.job_token == TOKEN and d.rewritten and TOKEN in d.rewritten
    else:
        assert d.rewritten is None and d.job_token is None
    if d.action == "refuse":
        assert d.refusal and "corral refused" in d.refusal
    else:
        assert d.refusal is None


# 5. Identity for duplicates
SAME = [
    ("npm run dev", "yarn dev"),
    ("npm run dev", "pnpm dev --host 0.0.0.0"),
    ("npm run dev", "bun run dev"),
    ("npm run dev", "npm run dev -- --port 4000"),
    ("npm start", "yarn start"),
    ("vite", "npx vite"),
    ("vite", "vite --port 4000"),
    ("next dev", "pnpm exec next dev -p 4000"),
    ("npm run dev", "PORT=1 npm run dev"),
    ("npm -w web run dev", "pnpm --filter web dev"),
    ("npm run dev", "nohup npm run dev"),
    ("uvicorn app:app", "uv run uvicorn app:app --reload"),
    (
        "npm run dev",
        "cd sub && npm run dev",
    ),  # identity is folder-free; the folder is compared apart
]
DIFFERENT = [
    ("npm run dev", "npm run dev:web"),
    ("npm run dev", "npm start"),
    ("npm run dev", "npm -w web run dev"),
    ("pnpm --filter web dev", "pnpm --filter api dev"),
    ("vite", "vite preview"),
    ("next dev", "next start"),
    ("uvicorn a:app", "uvicorn b:app"),
    ("go run ./cmd/api", "go run ./cmd/worker"),
    ("vite", "npm run dev"),
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_same_identity(a: str, b: str) -> None:
    assert _ident(a) == _ident(b)


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_different_identity(a: str, b: str) -> None:
    assert _ident(a) != _ident(b)


def test_identity_is_short_hex() -> None:
    ident = _ident("npm run dev")
    assert len(ident) == 16 and int(ident, 16) >= 0


# 7. Refusals against live jobs and held ports
def test_refuses_the_same_job_in_the_same_folder() -> None:
    job = live_job(identity=_ident("npm run dev"))
    d = decide("yarn dev", background=False, cwd=CWD, home=HOME, live=[job])
    assert d.action == "refuse" and d.refusal
    for part in (job.id, "pid 4242", "5173", "12m 34s", CWD, f"corral stop {job.id}"):
        assert part in d.refusal


def test_same_job_in_another_folder_runs() -> None:
    job = live_job(identity=_ident("npm run dev"), ports=())
    d = decide("npm run dev", background=False, cwd="/elsewhere", home=HOME, live=[job])
    assert d.action == "wrap"


def test_refuses_a_port_held_by_another_process() -> None:
    holder = PortHolder(5173, 999, "python -m http.server 5173 --token=hunter2hunter2", None)
    d = decide("vite", background=False, cwd=CWD, home=HOME, held_ports={5173: holder})
    assert d.action == "refuse" and d.refusal
    assert "pid 999" in d.refusal and "not started by corral" in d.refusal
    assert "hunter2" not in d.refusal


def test_refuses_a_port_held_by_a_corral_job() -> None:
    holder = PortHolder(4000, 77, "next dev -p 4000", "f" * 32)
    d = decide("vite --port 4000", background=False, cwd=CWD, home=HOME, held_ports={4000: holder})
    assert d.action == "refuse" and d.refusal and f"corral stop {'f' * 32}" in d.refusal


def test_refuses_a_port_of_a_live_job() -> None:
    job = live_job(identity="0" * 16, cwd="/other", ports=(4000,), command="API_KEY=s3cr3t x")
    d = decide("next dev -p 4000", background=False, cwd=CWD, home=HOME, live=[job])
    assert d.action == "refuse" and d.refusal and job.id in d.refusal
    assert "s3cr3t" not in d.refusal


def test_refuses_a_middle_amp_line_that_duplicates() -> None:
    job = live_job(identity=_ident("npm run dev"))
    d = decide("npm run dev & sleep 2", background=False, cwd=CWD, home=HOME, live=[job])
    assert d.action == "refuse"


def test_unreadable_lines_are_never_refused() -> None:
    job = live_job(identity=_ident("npm run dev"))
    d = decide("(npm run dev)", background=True, cwd=CWD, home=HOME, live=[job])
    assert d.action == "untouched" and not d.readable


def test_extra_runner_patterns_and_package_scripts() -> None:
    d = decide("make dev", background=False, cwd=CWD, home=HOME, extra_runners=["make dev"])
    assert d.action == "wrap"
    assert decide("make dev", background=False, cwd=CWD, home=HOME).action == "untouched"
    scripts = {"api": "nodemon server.js", "web": "vite --port 4100", "build": "vite build"}
    for line, action, port in (
        ("npm run api", "wrap", None),
        ("npm run web", "wrap", 4100),
        ("npm run build", "untouched", None),
    ):
        d = decide(line, background=False, cwd=CWD, home=HOME, package_scripts=scripts)
        assert d.action == action, line
        if action == "wrap":
            assert d.jobs[0].port == port


def test_display_hides_secrets_and_assignments() -> None:
    d = decide(
        "API_KEY=sk-abcdefghijklmnopqrstuvwx vite --token=abcdefgh123",
        background=False,
        cwd=CWD,
        home=HOME,
    )
    assert d.jobs and "sk-abc" not in d.jobs[0].display and "abcdefgh123" not in d.jobs[0].display


@pytest.mark.parametrize(
    "line",
    [
        "python3 -m http.server 0",
        "vite --port 0",
        "vite --port=0",
        "PORT=0 npm run dev",
        "uvicorn app:app --port 0",
        "gunicorn -b 127.0.0.1:0 app:app",
    ],
)
def test_port_zero_asks_for_no_particular_port(line: str) -> None:
    # 0 lets the system pick a free port: neither that nor the tool's default is requested
    decision = decide(line, background=True, cwd="/p", home="/h", token="0" * 32)
    assert decision.action == "wrap" and decision.jobs[0].port is None, decision
