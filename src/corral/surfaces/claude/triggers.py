"""Words whose presence in a line means it may start a long runner: the hook's fast path
reads them here instead of importing the line reader. Generated from
`corral.core.shell.runners.trigger_words()`; a test fails when the two differ (regenerate
with `python -m corral.surfaces.claude.triggers`)."""

WORDS = frozenset(
    (
        "air",
        "astro",
        "bun",
        "bundle",
        "bunx",
        "cargo",
        "command",
        "deno",
        "django",
        "django-admin",
        "docker",
        "docker-compose",
        "env",
        "expo",
        "flask",
        "gatsby",
        "go",
        "gunicorn",
        "http-server",
        "http.server",
        "hugo",
        "jekyll",
        "jest",
        "live-server",
        "manage.py",
        "metro",
        "mkdocs",
        "next",
        "ng",
        "nice",
        "node",
        "nodemon",
        "nohup",
        "npm",
        "npx",
        "nuxi",
        "nuxt",
        "parcel",
        "pipenv",
        "pipx",
        "pnpm",
        "pnpx",
        "poetry",
        "rails",
        "react-native",
        "remix",
        "serve",
        "start-storybook",
        "storybook",
        "streamlit",
        "tilt",
        "time",
        "tsc",
        "uv",
        "uvicorn",
        "uvx",
        "vite",
        "vitest",
        "webpack",
        "webpack-dev-server",
        "wrangler",
        "yarn",
    )
)


def source() -> str:
    """This file's text with WORDS taken from the runners table."""
    from corral.core.shell.runners import trigger_words

    body = "".join(f'        "{w}",\n' for w in sorted(trigger_words(())))
    with open(__file__) as f:
        text = f.read()
    head, _, rest = text.partition("WORDS = frozenset(\n    (\n")
    _, _, tail = rest.partition("    )\n)\n")
    return f"{head}WORDS = frozenset(\n    (\n{body}    )\n)\n{tail}"


if __name__ == "__main__":
    text = source()
    with open(__file__, "w") as out:
        out.write(text)
