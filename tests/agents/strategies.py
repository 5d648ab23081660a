"""Hypothesis strategies for what an agent sends its hook: any JSON-ish value where a field
is expected, and commands both plain and ones corral supervises."""

from hypothesis import strategies as st

VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=30))
COMMANDS = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["npm run dev", "sleep 300 &", "vite", "a & b", "python3 -m http.server"]),
    VALUES,
)
