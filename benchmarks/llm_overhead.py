"""What the LLM harness costs beyond the endpoint: per decision, and for the seats of a turn.

    python -m benchmarks.llm_overhead [--rounds 5] [--chunk 100] [--turns 5] [--delay 0.2]
        [--clock wall|cpu]

Both parts talk to ``envkit.llm.stub.StubEndpoint`` in this process over real HTTP on 127.0.0.1.

**Per decision.** A ``forage`` seat (its action signature, its system prompt, its first
``ObservationEnvelope``) decides against a stub that answers at once with a valid action. The
floor is a bare keep-alive ``httpx`` POST of the very payload the agent sends, with the reply's
JSON read: the HTTP round trip any client pays. The overhead of a set-up is its median decision
minus the floor's median (target: at most 1 ms). ``--clock cpu`` times this process's CPU time
instead of the wall's: the stub's thread does the same work for every set-up, so the difference is
still the client's, and other work on a shared machine does not land in it. The set-ups take
turns in chunks of ``--chunk`` decisions, the order rotating each round, so a machine that drifts
does not favour one of them.
``ReplayCache storing`` gives every decision a fresh scope, so each one misses, is sent and is
written (flushed to disk); ``ReplayCache answering`` replays those entries in replay-only mode and
sends nothing.

**The seats of a turn.** Four seats (``forage`` has three foragers: the fourth is shown the first's
observation), each an ``LLMAgent`` with its own ``ChatClient``, decide on a
``ThreadPoolExecutor`` against a stub that takes ``--delay`` seconds per answer, sharing an
``EndpointGate(K)``; the turn's wall time is the median over ``--turns`` turns. The ideal is
``ceil(4 / K) * delay``; the peer is the same four decisions one after another in one thread.

**Through the evaluation harness.** ``multiagent.evaluation.evaluate`` plays the ``commons``
world's four seats (every one focal, 10-turn episodes) with an ``openai:`` player against a stub
that answers at once, one request at a time (``llm_concurrency=1``). Its peer is the same run with
a scripted player that sends one bare ``httpx`` POST of the same payload per decision and then
harvests: the difference per decision is what the harness adds beyond the HTTP round trip
(prompt, validation, threads, records, logs). The two take turns, ``--rounds`` runs each of
``--episodes`` episodes; medians. Then the same four LLM seats against a stub that
takes ``--delay`` seconds: the wall time of a turn at K = 1, 2 and 4.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from benchmarks.machine import CLOCKS, add_clock_argument, load_line, machine_line
from envkit.llm import ChatClient, EndpointGate, LLMAgent, LLMSettings, ReplayCache
from envkit.llm.stub import StubEndpoint
from multiagent import parallel_env
from multiagent.dto import ObservationEnvelope
from multiagent.players.llm import world_system_prompt
from multiagent.signatures import action_signature
from multiagent.worlds import load_world
from multiagent.wrappers import TextObservationWrapper

WORLD = "forage"
SEATS = 4
ACTION = '{"move": "stay"}'
TARGET_OVERHEAD_MS = 1.0


def seat_settings(base_url: str, name: str) -> LLMSettings:
    return LLMSettings(
        name=name,
        model_name="stub-model",
        base_url=base_url,
        system_prompt=world_system_prompt(load_world(WORLD)),
        api_key_env="POLYARENA_BENCH_NO_KEY",
    )


def first_envelopes() -> dict[str, ObservationEnvelope]:
    """Every seat's first observation, as an LLM seat is shown it."""
    env = TextObservationWrapper(parallel_env(WORLD), format="json")
    env.reset(seed=0)
    return env.envelopes(list(env.agents))


def seat_agent(base_url: str, name: str, **client_options: Any) -> LLMAgent:
    settings = seat_settings(base_url, name)
    signature = action_signature(load_world(WORLD).actions)
    return LLMAgent(settings, signature=signature, client=ChatClient(settings, **client_options))


class Scoped:
    """A decision in a fresh cache scope each time (``prefix-0``, ``prefix-1``, ...)."""

    def __init__(self, agent: LLMAgent, envelope: ObservationEnvelope, prefix: str) -> None:
        self.agent, self.envelope, self.prefix, self.count = agent, envelope, prefix, 0

    def __call__(self) -> None:
        self.agent.client.cache_scope = f"{self.prefix}-{self.count}"
        self.count += 1
        self.agent.decide(self.envelope)


def decision_setups(
    base_url: str, envelope: ObservationEnvelope, payload: dict[str, Any], cache_dir: str
) -> dict[str, Callable[[], Any]]:
    """The set-ups of the per-decision part, each a call that makes one decision."""
    http = httpx.Client()
    url = base_url + "/chat/completions"
    plain = seat_agent(base_url, "Forager_1")
    gated = seat_agent(base_url, "Forager_1", gate=EndpointGate(SEATS))
    storing = seat_agent(base_url, "Forager_1", cache=ReplayCache(cache_dir))
    answering = seat_agent(base_url, "Forager_1", cache=ReplayCache(cache_dir, mode="replay-only"))
    return {
        "bare httpx POST (floor)": lambda: http.post(url, json=payload).json(),
        "LLMAgent.decide": lambda: plain.decide(envelope),
        "LLMAgent.decide, EndpointGate": lambda: gated.decide(envelope),
        "LLMAgent.decide, ReplayCache storing": Scoped(storing, envelope, "decision"),
        "LLMAgent.decide, ReplayCache answering": Scoped(answering, envelope, "decision"),
    }


def time_chunks(
    setups: dict[str, Callable[[], Any]], rounds: int, chunk: int, clock: Callable[[], float]
) -> dict[str, list[float]]:
    """Each set-up's decision times (seconds), in chunks that take turns round by round."""
    times: dict[str, list[float]] = {name: [] for name in setups}
    names = list(setups)
    for round_index in range(rounds):
        order = names[round_index % len(names) :] + names[: round_index % len(names)]
        # the replayer reads what the storer wrote: it always runs after it within a round
        order.sort(key=lambda name: name.endswith("answering"))
        for name in order:
            decide = setups[name]
            for _ in range(chunk):
                start = clock()
                decide()
                times[name].append(clock() - start)
    return times


def per_decision(rounds: int, chunk: int, clock_name: str) -> None:
    clock = CLOCKS[clock_name]
    envelope = first_envelopes()["Forager_1"]
    sent: list[dict[str, Any]] = []

    def reply(request: dict[str, Any]) -> str:
        if not sent:
            sent.append(request)
        return ACTION

    with StubEndpoint(reply) as stub, tempfile.TemporaryDirectory() as cache_dir:
        probe = seat_agent(stub.base_url, "Forager_1")
        probe.decide(envelope)
        probe.close()
        setups = decision_setups(stub.base_url, envelope, sent[0], cache_dir)
        time_chunks(setups, 1, chunk // 5 or 1, clock)  # warm-up: connections, imports, caches
        times = time_chunks(setups, rounds, chunk, clock)
    floor = statistics.median(times["bare httpx POST (floor)"])
    prompt_chars = sum(len(str(message["content"])) for message in sent[0]["messages"])
    print(
        f"\nPer decision: {WORLD} seat Forager_1, a {prompt_chars}-character prompt, stub "
        f"answering at once; {rounds} rounds x {chunk} decisions per set-up; {clock_name} clock"
    )
    print("| set-up | median ms | p95 ms | overhead vs floor (ms) | ratio to floor |")
    print("|---|---:|---:|---:|---:|")
    for name, samples in times.items():
        median = statistics.median(samples)
        p95 = statistics.quantiles(samples, n=20)[-1]
        overhead = "-" if name.endswith("(floor)") else f"{(median - floor) * 1e3:+.3f}"
        print(
            f"| {name} | {median * 1e3:.3f} | {p95 * 1e3:.3f} | {overhead} | "
            f"{median / floor:.2f}x |"
        )
    print(f"target: overhead <= {TARGET_OVERHEAD_MS:g} ms per decision")


def seats_of_a_turn(turns: int, delay: float) -> None:
    forage = list(first_envelopes().values())  # three foragers: the fourth seat sees the first's
    envelopes = {f"Seat_{index + 1}": forage[index % len(forage)] for index in range(SEATS)}
    seats = list(envelopes)
    print(f"\nThe seats of a turn: {len(seats)} seats, stub answering after {delay:g} s")
    print("| set-up | median turn s | ideal s | ratio to ideal | speed-up vs one after another |")
    print("|---|---:|---:|---:|---:|")
    with StubEndpoint(ACTION, delay_seconds=delay) as stub:
        agents = [seat_agent(stub.base_url, seat) for seat in seats]
        for agent, seat in zip(agents, seats, strict=True):
            agent.decide(envelopes[seat])  # warm-up: open the connections

        def one_after_another() -> None:
            for agent, seat in zip(agents, seats, strict=True):
                agent.decide(envelopes[seat])

        sequential = median_seconds(one_after_another, turns)
        print(
            f"| one after another, one thread | {sequential:.3f} | {len(seats) * delay:.3f} | "
            f"{sequential / (len(seats) * delay):.2f}x | 1.00x |"
        )
        with ThreadPoolExecutor(max_workers=len(seats)) as pool:
            for limit in (1, 2, 4):
                gate = EndpointGate(limit)
                gated = [seat_agent(stub.base_url, seat, gate=gate) for seat in seats]

                def turn(gated: list[LLMAgent] = gated) -> None:
                    asked = [
                        pool.submit(a.decide, envelopes[s])
                        for a, s in zip(gated, seats, strict=True)
                    ]
                    for answer in asked:
                        answer.result()

                turn()  # warm-up
                wall = median_seconds(turn, turns)
                ideal = math.ceil(len(seats) / limit) * delay
                print(
                    f"| threads, EndpointGate({limit}) | {wall:.3f} | {ideal:.3f} | "
                    f"{wall / ideal:.2f}x | {sequential / wall:.2f}x |"
                )


def median_seconds(run: Callable[[], None], times: int) -> float:
    walls = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


EVAL_TURNS = 10
_posting: dict[str, Any] = {}  # the scripted peer's client, URL and payload


def post_and_harvest(turn: Any) -> dict[str, Any]:
    """The scripted peer: one bare POST of an LLM-sized request, then a fixed harvest."""
    _posting["http"].post(_posting["url"], json=_posting["payload"]).json()
    return {"harvest": 10.0}


def short_commons(folder: str) -> str:
    """The commons world with one scenario, every seat focal for ``EVAL_TURNS`` turns."""
    import yaml

    from multiagent.worlds import world_path

    data = yaml.safe_load(world_path("commons").read_text())
    seats = [agent["name"] for agent in data["agents"]]
    data["scenarios"] = {"all": {"focal": seats, "episode_length": EVAL_TURNS}}
    path = f"{folder}/commons-short.yaml"
    with open(path, "w", encoding="utf-8") as file:
        yaml.safe_dump(data, file)
    return path


def through_the_harness(episodes: int, rounds: int, delay: float) -> None:
    from multiagent.evaluation import evaluate

    harvest = '{"harvest": 10}'
    sent: list[dict[str, Any]] = []

    def reply(request: dict[str, Any]) -> str:
        if not sent:
            sent.append(request)
        return harvest

    with tempfile.TemporaryDirectory() as folder, StubEndpoint(reply) as stub:
        world = short_commons(folder)
        llm = f"openai:stub-model?base_url={stub.base_url}&api_key_env=POLYARENA_BENCH_NO_KEY"
        peer = "scripted:benchmarks.llm_overhead:post_and_harvest"
        decisions = episodes * EVAL_TURNS * SEATS
        runs = iter(range(10**6))

        def run(focal: str) -> tuple[float, float]:
            """Wall and CPU seconds per decision of one run."""
            wall, cpu = time.perf_counter(), time.process_time()
            evaluate(world, focal=[focal], episodes=episodes, baselines=False,
                     llm_concurrency=1, out=f"{folder}/{next(runs)}", progress=False)  # fmt: skip
            return (time.perf_counter() - wall) / decisions, (time.process_time() - cpu) / decisions

        run(llm)  # warm-up; the first request is the peer's payload
        _posting.update(http=httpx.Client(), url=stub.base_url + "/chat/completions",
                        payload=sent[0])  # fmt: skip
        times: dict[str, list[tuple[float, float]]] = {peer: [], llm: []}
        for _ in range(rounds):
            for focal in (peer, llm):
                times[focal].append(run(focal))
        medians = {focal: [statistics.median(t[i] for t in timed) for i in (0, 1)]
                   for focal, timed in times.items()}  # fmt: skip
        print(f"\n{decisions} decisions a run ({episodes} episodes of {EVAL_TURNS} turns, "
              f"4 seats), {rounds} runs each, taking turns; medians:\n")  # fmt: skip
        print("| player | wall ms per decision | CPU ms per decision |")
        print("|---|---:|---:|")
        names = {peer: "scripted: a bare httpx POST, then harvest", llm: "openai: through LLMAgent"}
        for focal, (wall, cpu) in medians.items():
            print(f"| {names[focal]} | {1000 * wall:.3f} | {1000 * cpu:.3f} |")
        (peer_wall, peer_cpu), (llm_wall, llm_cpu) = medians[peer], medians[llm]
        print(f"\nThe harness adds {1000 * (llm_wall - peer_wall):+.3f} ms (wall), "
              f"{1000 * (llm_cpu - peer_cpu):+.3f} ms (CPU) per decision "
              f"(target: at most {TARGET_OVERHEAD_MS:g} ms).")  # fmt: skip

    with (
        tempfile.TemporaryDirectory() as folder,
        StubEndpoint(harvest, delay_seconds=delay) as slow,
    ):
        world = short_commons(folder)
        llm = f"openai:stub-model?base_url={slow.base_url}&api_key_env=POLYARENA_BENCH_NO_KEY"
        print(
            f"\nFour LLM seats against a stub taking {delay:g} s, one {EVAL_TURNS}-turn episode:\n"
        )
        print("| K | turn s | ideal s | ratio |")
        print("|---:|---:|---:|---:|")
        for limit in (1, 2, 4):
            start = time.perf_counter()
            evaluate(world, focal=[llm], episodes=1, baselines=False, llm_concurrency=limit,
                     out=f"{folder}/k{limit}", progress=False)  # fmt: skip
            turn = (time.perf_counter() - start) / EVAL_TURNS
            ideal = math.ceil(SEATS / limit) * delay
            print(f"| {limit} | {turn:.3f} | {ideal:.3f} | {turn / ideal:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the per-decision part")
    parser.add_argument("--chunk", type=int, default=100, help="decisions per set-up a round")
    parser.add_argument("--turns", type=int, default=5, help="turns per set-up of the seats part")
    parser.add_argument("--delay", type=float, default=0.2, help="the slow stub's seconds a call")
    parser.add_argument(
        "--episodes", type=int, default=10, help="episodes of each harness run (10 turns each)"
    )
    add_clock_argument(parser)  # the per-decision part only: a turn's wall time is the point
    args = parser.parse_args()
    for name in ("rounds", "chunk", "turns", "episodes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: must be at least 1")
    print(machine_line("httpx", "pydantic"))
    print(load_line())
    per_decision(args.rounds, args.chunk, args.clock)
    seats_of_a_turn(args.turns, args.delay)
    through_the_harness(args.episodes, args.rounds, args.delay)
    print(load_line())


if __name__ == "__main__":
    main()
