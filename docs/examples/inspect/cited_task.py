"""A small Inspect task scored by citecheck (docs/inspect.md).

The model is Inspect's mock model answering with citations, as a real provider's answer
carries them (``ContentText.citations``); the scorer verifies each cited sentence against
its page. The cassettes beside this file hold the pages and the judge's verdicts, so

    inspect eval docs/examples/inspect/cited_task.py

replays offline: the boiling sample passes, the salt sample's citation is contradicted.
"""

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessageAssistant,
    ContentText,
    ModelOutput,
    ModelUsage,
    UrlCitation,
    get_model,
)
from inspect_ai.solver import generate

from pytest_citecheck.inspect import citecheck_scorer

BOIL_URL = "https://science.example/water/boiling"
SALT_URL = "https://kitchen.example/salt-and-water"
SALT = "Adding salt lowers the boiling point of water."
SALT_LINK = f" ([kitchen]({SALT_URL}))"

ANSWERS = {
    "How hot does water boil?": [
        # Anthropic's way: the cited text is its own part, the quote the provider read.
        ContentText(
            text="Water boils at 100 degrees Celsius at sea level.",
            citations=[UrlCitation(url=BOIL_URL, cited_text="boils at 100 degrees Celsius")],
        ),
        ContentText(text=" Nobody cited this sentence."),
    ],
    "Does salt change boiling?": [
        # OpenAI's way: a [start, end] range over the link the model printed.
        ContentText(
            text=SALT + SALT_LINK,
            citations=[
                UrlCitation(url=SALT_URL, cited_text=(len(SALT), len(SALT) + len(SALT_LINK)))
            ],
        ),
    ],
}


def answer(messages, tools, tool_choice, config):  # type: ignore[no-untyped-def]
    output = ModelOutput.from_message(
        ChatMessageAssistant(content=ANSWERS[messages[-1].text], model="mockllm/model")
    )
    # Usage given: the mock model would otherwise count tokens with tiktoken, whose
    # encoding is downloaded on first use.
    output.usage = ModelUsage(input_tokens=12, output_tokens=30, total_tokens=42)
    return output


@task
def cited() -> Task:
    return Task(
        dataset=[
            Sample(id="boiling", input="How hot does water boil?"),
            Sample(id="salt", input="Does salt change boiling?"),
        ],
        solver=generate(),
        scorer=citecheck_scorer(cassettes=str(Path(__file__).with_name("cassettes")), ranker="bm25"),
        model=get_model("mockllm/model", custom_outputs=answer),
    )
