#!/usr/bin/env python3
"""Runs neat-python's spiking XOR example (examples/xor/evolve-spiking.py,
Izhikevich neurons) from a neat-python source tree given as an argument, for
the comparison in experiments/RESULTS.md ("Spiking tasks"). Nothing of
neat-python is copied here: the example's own fitness function and config
are loaded from that tree; its plotting modules (matplotlib, visualize) are
replaced by empty stand-ins because only the evolution is timed.

    python3 experiments/neat_spiking_xor.py /tmp/neat-python [--seeds 1,2,3]
        [--generations 300]

Prints one line per seed: solved or not, generations, evaluations (genomes
evaluated, pop_size per generation), wall time; then a summary. Without the
tree it says so and exits 0 (the comparison is skipped)."""
import argparse
import importlib.util
import os
import random
import sys
import time
import types


def stub_plotting():
    mpl = types.ModuleType("matplotlib")
    mpl.patches = types.ModuleType("matplotlib.patches")
    mpl.pylab = types.ModuleType("matplotlib.pylab")
    for name, mod in (("matplotlib", mpl), ("matplotlib.patches", mpl.patches),
                      ("matplotlib.pylab", mpl.pylab), ("visualize", types.ModuleType("visualize"))):
        sys.modules.setdefault(name, mod)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree", help="a neat-python source tree (git archive of CodeReclaimers/neat-python)")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--generations", type=int, default=300)
    a = ap.parse_args()
    example = os.path.join(a.tree, "examples", "xor", "evolve-spiking.py")
    if not os.path.exists(example):
        print(f"neat-python not found at {a.tree} (no {example}): comparison skipped")
        return 0
    sys.path.insert(0, a.tree)
    stub_plotting()
    import neat  # noqa: E402  (from the tree given)

    spec = importlib.util.spec_from_file_location("evolve_spiking", example)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    cfg_path = os.path.join(os.path.dirname(example), "config-spiking")
    n_solved, evals_solved, times = 0, [], []
    for seed in [int(s) for s in a.seeds.split(",")]:
        random.seed(seed)
        config = neat.Config(neat.iznn.IZGenome, neat.DefaultReproduction,
                             neat.DefaultSpeciesSet, neat.DefaultStagnation, cfg_path)
        config.output_nodes = 2  # as the example does
        pop = neat.population.Population(config)
        count = [0]

        def evaluate(genomes, conf):
            for _, g in genomes:
                g.fitness = ex.eval_genome(g, conf)
                count[0] += 1

        t0 = time.time()
        best = pop.run(evaluate, a.generations)
        wall = time.time() - t0
        solved = best.fitness >= config.fitness_threshold
        n_solved += solved
        times.append(wall)
        if solved:
            evals_solved.append(count[0])
        print(f"seed {seed}: solved {int(solved)} generations {pop.generation} "
              f"evaluations {count[0]} best_fitness {best.fitness:.4f} wall_s {wall:.1f}",
              flush=True)
    mean = sum(evals_solved) / len(evals_solved) if evals_solved else float("nan")
    print(f"solved {n_solved}/{len(times)} mean_evaluations_solved {mean:.0f} "
          f"mean_wall_s {sum(times) / len(times):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
