# docs_refs.sed -- points the repository's references to the design notes that
# lived outside it (DESIGN.md, FACTS.md, PROTOCOLS.md) at docs/ instead.
# Apply once, from the top of the tree, to every file that still names them
# (never to this script itself, nor to docs/):
#
#   grep -rlE 'DESIGN\.md|FACTS\.md|PROTOCOLS\.md' --exclude-dir=.git \
#       --exclude-dir=docs --exclude=docs_refs.sed . | xargs sed -i -E -f tests/docs_refs.sed
#   grep -rnE 'DESIGN\.md|FACTS\.md|PROTOCOLS\.md' --exclude-dir=.git \
#       --exclude-dir=docs --exclude=docs_refs.sed .    # must print nothing
#
# One rule per reference of 68587eb, matched with its context so that each
# goes to the page that says what the sentence relies on. Markdown files get
# links (relative to the file). The three rules at the end catch references
# that moved or were reworded since (or were added): look at what they changed.

# master/cmd_nn.c:7 -- OpenBLAS mis-detecting CPUs
s|CPU detection, which gets some CPUs wrong \(FACTS\.md\)|CPU detection, which gets some CPUs wrong (docs/facts.md)|g
# master/farm.c:3 -- two messages in flight per worker
s|\(FACTS\.md: two in flight mattered more than batch|(docs/facts.md: two in flight mattered more than batch|g
# nn/reference.c:1 -- the semantics of a time step
s|the semantics of DESIGN\.md as a plain loop|the semantics of docs/architecture.md as a plain loop|g
# nn/nn.h:25 -- the semantics of a time step
s|Semantics \(DESIGN\.md\): one time step|Semantics (docs/architecture.md): one time step|g
# RELIABILITY.md:110 -- WAL with synchronous=NORMAL and power loss
s|^commits, FACTS\.md\), damage inside|commits, [docs/facts.md](docs/facts.md)), damage inside|g
# Makefile:13 -- the layers of the modules
s|^# Layers \(DESIGN\.md\):|# Layers (docs/architecture.md):|g
# Makefile:36 -- bit-identical results, a contract
s|\(DESIGN\.md contract\)|(docs/contracts.md, "Determinism")|g
# BENCHMARKS.md:113 -- the Xeon of the first measurements
s|This machine is not the one FACTS\.md describes|This machine is not the one [docs/facts.md](docs/facts.md) describes|g
# README.md:69 -- Open MPI 4.1 has no fault tolerance
s|\(Open MPI 4\.1 has no fault tolerance: FACTS\.md\)|(Open MPI 4.1 has no fault tolerance: [docs/facts.md](docs/facts.md))|g
# README.md:438 -- msgpack-c has no size limits
s|\(msgpack-c has no size limits of its own: FACTS\.md\)|(msgpack-c has no size limits of its own: [docs/facts.md](docs/facts.md))|g
# genome/tv.h:106 -- a 5-byte msgpack header asking for 48 GB
s|^ \* \(FACTS\.md\)\. TV_EFORMAT with the byte offset| * (docs/facts.md). TV_EFORMAT with the byte offset|g
# genome/codec.c:5 -- msgpack arrays against one bin
s|as a bin 0\.08 ms \(FACTS\.md\)|as a bin 0.08 ms (docs/facts.md)|g
# tests/faults/worker_kill.sh:3 -- Open MPI 4.1 has no fault tolerance
s|Open MPI 4\.1 has no fault tolerance \(FACTS\.md\), so the job|Open MPI 4.1 has no fault tolerance (docs/facts.md), so the job|g
# tests/it_search.sh:59 -- kill -9 of mpirun ends the ranks within a second
s|# finish, FACTS\.md; Open MPI gives each rank|# finish, docs/facts.md; Open MPI gives each rank|g
# tests/test_genome_codec.c:654 -- msgpack-c allocating what a header announces
s|alone would try to allocate 96 GB \(FACTS\.md\)|alone would try to allocate 96 GB (docs/facts.md)|g
# experiments/xor.ini:1 and tests/fuzz/corpus/config/xor_ini:1 (the same line)
s|^; XOR as the NEAT paper ran it \(PROTOCOLS\.md\):|; XOR as the NEAT paper ran it (docs/protocols.md):|g
# experiments/xor.c:1
s|XOR as the NEAT paper ran it \(PROTOCOLS\.md\): inputs bias|XOR as the NEAT paper ran it (docs/protocols.md): inputs bias|g
# experiments/pole1.ini:1
s|^; Single pole balancing as NEAT's code ran it \(PROTOCOLS\.md\):|; Single pole balancing as NEAT's code ran it (docs/protocols.md):|g
# experiments/pole1.c:1
s|single pole balancing as NEAT ran it \(PROTOCOLS\.md\): a random|single pole balancing as NEAT ran it (docs/protocols.md): a random|g
# experiments/pole1.c:8-9 -- the third input's offset (docs/protocols.md gives 0.2094384)
s|\(theta_dot \+ 1\) / 2\. PROTOCOLS\.md writes the$|(theta_dot + 1) / 2. In docs/protocols.md, the|g
s|^ \* third offset 0\.2094: it is NEAT's twelve_degrees constant, 0\.2094384\.| * third offset, often written 0.2094, is NEAT's twelve_degrees constant, 0.2094384.|g
# experiments/dpv.ini:2
s|^; \(PROTOCOLS\.md\): 7 inputs fully joined|; (docs/protocols.md): 7 inputs fully joined|g
# experiments/dpnv.ini:2
s|^; ran it; PROTOCOLS\.md\): inputs x, theta1, theta2|; ran it; docs/protocols.md): inputs x, theta1, theta2|g
# experiments/pole2.c:2
s|as NEAT, ESP and CoSyNE ran it \(PROTOCOLS\.md\)\. Every|as NEAT, ESP and CoSyNE ran it (docs/protocols.md). Every|g
# experiments/pole2.c:22-23 -- where the protocol and NEAT's code differ
s|\(its balanced_sum\)\. Where PROTOCOLS\.md$|(its balanced_sum). Where docs/protocols.md|g
s|and NEAT's code differ on a boundary, PROTOCOLS\.md is followed|and NEAT's code differ on a boundary, docs/protocols.md is followed|g
# experiments/cartpole.h:3
s|benchmarks, exactly as PROTOCOLS\.md gives them|benchmarks, exactly as docs/protocols.md gives them|g
# experiments/cartpole.c:1
s|the cart-pole physics of PROTOCOLS\.md \(see cartpole\.h\)|the cart-pole physics of docs/protocols.md (see cartpole.h)|g
# experiments/tasks.h:20
s|Episode lengths of PROTOCOLS\.md\.|Episode lengths of docs/protocols.md.|g
# experiments/sweep:25 -- how evaluations to solve are counted
s|evaluations to solve as PROTOCOLS\.md counts them|evaluations to solve as docs/protocols.md counts them|g
# experiments/RESULTS.md:3, 23, 31, 105
s|control benchmarks of `/work/shared/PROTOCOLS\.md`|control benchmarks of [docs/protocols.md](../docs/protocols.md)|g
s|allows 5 %, and PROTOCOLS\.md gives no failure counts|allows 5 %, and [docs/protocols.md](../docs/protocols.md) gives no failure counts|g
s|are counted as PROTOCOLS\.md says:|are counted as [docs/protocols.md](../docs/protocols.md) says:|g
s|`experiments/pole1\.ini`: PROTOCOLS\.md's physics\.|`experiments/pole1.ini`: the physics of [docs/protocols.md](../docs/protocols.md).|g
# tests/test_tasks.c:10, 688, 705, 714 -- the python check of the tasks
s|a second implementation of PROTOCOLS\.md in plain python|a second implementation of docs/protocols.md in plain python|g
s|# DESIGN\.md semantics, identity activations only|# docs/architecture.md semantics, identity activations only|g
s|# PROTOCOLS\.md single pole, Euler|# docs/protocols.md single pole, Euler|g
s|# PROTOCOLS\.md double pole \(Wieland\)|# docs/protocols.md double pole (Wieland)|g

# Whatever is left (moved, reworded or new since 68587eb).
s#(/work/shared/)?DESIGN\.md#docs/architecture.md#g
s#(/work/shared/)?FACTS\.md#docs/facts.md#g
s#(/work/shared/)?PROTOCOLS\.md#docs/protocols.md#g
