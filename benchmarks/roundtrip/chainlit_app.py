"""The Chainlit echo app of benchmarks/roundtrip_browser.py (runs in its own venv)."""

import chainlit as cl


@cl.on_message
async def main(m: cl.Message) -> None:
    await cl.Message(content=f"You said: {m.content}").send()
