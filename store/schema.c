/*
 * schema.c -- the SQL of the store: schema version 6 (tables, indexes,
 * views) as one script, run in the transaction that creates a database,
 * and the migrations from older versions. See store.h for the invariants
 * and docs/sql.md for the views.
 *
 * Keys: individuals, genomes, generations, species and checkpoints are
 * WITHOUT ROWID tables keyed by (run_id, ...), so the rows of one run and one
 * generation sit together. Genomes have their own table so that queries over
 * individuals never read genome bytes.
 */
#include "schema.h"

#include "store.h"

#include <stddef.h>

/* Per-generation questions (best, mean, top k) read only this index. It is in id order within a
 * generation, so a batch of new individuals appends at its end; ordered by fitness (version 1),
 * every batch rewrote pages all over its generation's part of the index. */
#define INDIVIDUALS_BY_GENERATION                                                                  \
    "CREATE INDEX individuals_by_generation ON individuals(run_id, generation, id, fitness);\n"

/* Children of the generation that failed their evaluation (the task or its
 * trainer refused the genome: fitness NULL), since version 5. */
#define GENERATIONS_FAILED "failed INTEGER NOT NULL DEFAULT 0"

#define RUN_NOTES                                                                                  \
    "CREATE TABLE run_notes(\n"                                                                    \
    "  run_id INTEGER NOT NULL REFERENCES runs(run_id),\n"                                         \
    "  key TEXT NOT NULL,\n"                                                                       \
    "  value TEXT NOT NULL,\n"                                                                     \
    "  PRIMARY KEY (run_id, key)\n"                                                                \
    ") WITHOUT ROWID;\n"

/* The accuracy-connections front (since version 4): per run, each
 * individual that no other beats on both counts, i.e. whose fitness is
 * higher than that of every individual with fewer connections (equal
 * sizes: the fitter, then the lower id). Ordered by size, the window's
 * running maximum is the best fitness of the smaller ones; the champion
 * test (a classify run's validation accuracy) is looked up only for the
 * rows of the front. "The smallest network with fitness >= X" is the first
 * row of the front with fitness >= X (docs/sql.md). */
#define V_FRONT "CREATE VIEW v_front AS\n" STORE_FRONT_SELECT ";\n"

/* The objectives of an individual (since version 6, the last columns, where
 * the migration's ADD COLUMN puts them): NULL where unknown. */
#define IND_VALID_ACC "valid_acc REAL"
#define IND_FLASH "flash INTEGER"
#define IND_RAM "ram INTEGER"
#define IND_MACS "macs INTEGER"

#define V_INDIVIDUALS                                                                              \
    "CREATE VIEW v_individuals AS\n"                                                               \
    "SELECT r.name AS run, i.run_id, i.id, i.generation, i.fitness, i.parent1, i.parent2,\n"       \
    "  i.op, coalesce(o.name, 'op ' || i.op) AS operator, i.species, i.n_neurons,\n"               \
    "  i.n_conns, i.n_skip, i.n_recurrent, i.eval_seconds, i.rank, i.solved,\n"                    \
    "  i.valid_acc, i.flash, i.ram, i.macs\n"                                                      \
    "FROM individuals i JOIN runs r ON r.run_id = i.run_id\n"                                      \
    "LEFT JOIN operators o ON o.op = i.op;\n"

/* The accuracy-flash front of each generation (since version 6; schema.h,
 * STORE_FLASH_FRONT_SELECT, says which individuals). */
#define V_FRONT_GEN                                                                                \
    "CREATE VIEW v_front_gen AS\n" STORE_FLASH_FRONT_SELECT("i.run_id, i.generation", "") ";\n"

const char *const store_schema_sql[] = {
    "CREATE TABLE trevo_meta(\n"
    "  key TEXT PRIMARY KEY NOT NULL,\n"
    "  value NOT NULL\n"
    ") WITHOUT ROWID;\n",

    "CREATE TABLE runs(\n"
    "  run_id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL UNIQUE,\n"
    "  config TEXT NOT NULL,\n"
    "  seed INTEGER NOT NULL,\n"
    "  status TEXT NOT NULL DEFAULT 'running'\n"
    "    CHECK (status IN ('running', 'stopped', 'done', 'failed')),\n"
    "  program_version TEXT NOT NULL,\n"
    "  created_at TEXT NOT NULL,\n"
    "  updated_at TEXT NOT NULL,\n"
    /* who writes (or last wrote) the run; the lock itself is in -lock */
    "  writer_pid INTEGER,\n"
    "  writer_host TEXT,\n"
    "  writer_since TEXT\n"
    ");\n",

    /* a run's notes (store_run_note_set): since version 3 */
    RUN_NOTES,

    "CREATE TABLE operators(\n"
    "  op INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL UNIQUE\n"
    ");\n",
    "INSERT INTO operators(op, name) VALUES (0, 'init'), (1, 'mutate'), (2, 'crossover'),\n"
    "  (3, 'crossover+mutate'), (4, 'elite'), (5, 'import');\n",

    "CREATE TABLE individuals(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(run_id),\n"
    "  id INTEGER NOT NULL,\n"
    "  generation INTEGER NOT NULL,\n"
    "  fitness REAL,\n" /* NULL: not a number */
    "  parent1 INTEGER,\n"
    "  parent2 INTEGER,\n"
    "  op INTEGER NOT NULL,\n"
    "  species INTEGER,\n"
    "  n_neurons INTEGER NOT NULL,\n"
    "  n_conns INTEGER NOT NULL,\n"
    "  n_skip INTEGER NOT NULL,\n"
    "  n_recurrent INTEGER NOT NULL,\n"
    "  eval_seconds REAL NOT NULL,\n"
    "  rank INTEGER NOT NULL,\n"
    "  solved INTEGER NOT NULL DEFAULT 0,\n"
    "  " IND_VALID_ACC ",\n"
    "  " IND_FLASH ",\n"
    "  " IND_RAM ",\n"
    "  " IND_MACS ",\n"
    "  PRIMARY KEY (run_id, id)\n"
    ") WITHOUT ROWID;\n",
    INDIVIDUALS_BY_GENERATION,

    /* A rowid table since version 4 (WITHOUT ROWID before): in a WITHOUT
     * ROWID table the genome is part of the key, and SQLite reads the whole
     * record of every cell an insertion or a lookup compares with when it
     * spills onto overflow pages -- several genomes read per genome written,
     * 60 % of the store's time with 600 KB genomes. Here the key is in the
     * (run_id, id) index and the bytes are only read when asked for. Files
     * of older versions keep their table: every statement works on both. */
    "CREATE TABLE genomes(\n"
    "  run_id INTEGER NOT NULL,\n"
    "  id INTEGER NOT NULL,\n"
    "  data BLOB NOT NULL,\n" /* genome_encode() bytes */
    "  PRIMARY KEY (run_id, id)\n"
    ");\n",

    "CREATE TABLE generations(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(run_id),\n"
    "  generation INTEGER NOT NULL,\n"
    "  best REAL,\n"
    "  mean REAL,\n"
    "  median REAL,\n"
    "  champion INTEGER,\n"
    "  n_species INTEGER NOT NULL,\n"
    "  n_evals INTEGER NOT NULL,\n"
    "  wall_seconds REAL NOT NULL,\n"
    "  closed_at TEXT NOT NULL,\n"
    /* 1 once the population holds a solution (the task's success test, or
     * the champion test of tasks that have one) */
    "  solved INTEGER NOT NULL DEFAULT 0,\n"
    /* the champion test's score (DPNV: starts generalized), NULL: none */
    "  champion_test REAL,\n"
    /* since version 5 (the last column, where the migration's ADD COLUMN puts it) */
    "  " GENERATIONS_FAILED ",\n"
    "  PRIMARY KEY (run_id, generation)\n"
    ") WITHOUT ROWID;\n",

    "CREATE TABLE species(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(run_id),\n"
    "  generation INTEGER NOT NULL,\n"
    "  species INTEGER NOT NULL,\n"
    "  size INTEGER NOT NULL,\n"
    "  best_fitness REAL,\n"
    "  mean_fitness REAL,\n"
    "  representative INTEGER,\n"
    "  born INTEGER,\n"
    "  stagnant INTEGER,\n"
    "  PRIMARY KEY (run_id, generation, species)\n"
    ") WITHOUT ROWID;\n",

    /* population: the ids, 8 bytes each, little-endian signed */
    "CREATE TABLE checkpoints(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(run_id),\n"
    "  generation INTEGER NOT NULL,\n"
    "  state BLOB NOT NULL,\n"
    "  population BLOB NOT NULL,\n"
    "  n_population INTEGER NOT NULL,\n"
    "  created_at TEXT NOT NULL,\n"
    "  PRIMARY KEY (run_id, generation)\n"
    ") WITHOUT ROWID;\n",

    /* ---- views: the questions users ask with `sqlite3 run.db` ---- */

    "CREATE VIEW v_runs AS\n"
    "SELECT r.run_id, r.name, r.status, r.seed, r.program_version, r.created_at,\n"
    "  r.updated_at, r.writer_pid, r.writer_host,\n"
    "  (SELECT max(g.generation) FROM generations g WHERE g.run_id = r.run_id)\n"
    "    AS last_generation,\n"
    "  (SELECT max(g.best) FROM generations g WHERE g.run_id = r.run_id) AS best_fitness,\n"
    "  (SELECT sum(g.n_evals) FROM generations g WHERE g.run_id = r.run_id) AS evaluations\n"
    "FROM runs r;\n",

    V_INDIVIDUALS,

    "CREATE VIEW v_progress AS\n"
    "SELECT r.name AS run, g.run_id, g.generation, g.best, g.mean, g.median,\n"
    "  max(g.best) OVER w AS best_so_far, g.n_species, g.n_evals,\n"
    "  sum(g.n_evals) OVER w AS total_evals, g.wall_seconds,\n"
    "  sum(g.wall_seconds) OVER w AS total_seconds, g.champion, g.solved,\n"
    "  g.champion_test, g.closed_at\n"
    "FROM generations g JOIN runs r ON r.run_id = g.run_id\n"
    "WINDOW w AS (PARTITION BY g.run_id ORDER BY g.generation ROWS UNBOUNDED PRECEDING);\n",

    "CREATE VIEW v_champions AS\n"
    "SELECT r.name AS run, g.run_id, g.generation, i.id, i.fitness,\n"
    "  i.generation AS born, coalesce(o.name, 'op ' || i.op) AS operator, i.parent1,\n"
    "  i.parent2, i.species, i.n_neurons, i.n_conns, i.n_skip, i.n_recurrent, i.solved\n"
    "FROM generations g JOIN runs r ON r.run_id = g.run_id\n"
    "JOIN individuals i ON i.run_id = g.run_id AND i.id = g.champion\n"
    "LEFT JOIN operators o ON o.op = i.op;\n",

    /* Lineage of the champion of each run's last closed generation. UNION
     * keeps each ancestor once however many paths lead to it (crossover makes
     * a DAG); depth counts generations back. For any other individual, the
     * same CTE with another start (docs/sql.md). */
    "CREATE VIEW v_champion_lineage AS\n"
    "WITH RECURSIVE lin(run_id, root, ancestor) AS (\n"
    "  SELECT g.run_id, g.champion, g.champion FROM generations g\n"
    "  WHERE g.champion IS NOT NULL\n"
    "    AND g.generation = (SELECT max(x.generation) FROM generations x\n"
    "                        WHERE x.run_id = g.run_id)\n"
    "  UNION\n"
    "  SELECT l.run_id, l.root, CASE k.slot WHEN 1 THEN i.parent1 ELSE i.parent2 END\n"
    "  FROM lin l JOIN individuals i ON i.run_id = l.run_id AND i.id = l.ancestor\n"
    "  JOIN (SELECT 1 AS slot UNION ALL SELECT 2) k\n"
    "  WHERE CASE k.slot WHEN 1 THEN i.parent1 ELSE i.parent2 END IS NOT NULL\n"
    ")\n"
    "SELECT r.name AS run, l.run_id, l.root, l.ancestor,\n"
    "  t.generation - a.generation AS depth, a.generation, a.fitness,\n"
    "  coalesce(o.name, 'op ' || a.op) AS operator, a.parent1, a.parent2, a.n_neurons,\n"
    "  a.n_conns, a.n_skip, a.n_recurrent\n"
    "FROM lin l JOIN runs r ON r.run_id = l.run_id\n"
    "JOIN individuals t ON t.run_id = l.run_id AND t.id = l.root\n"
    "JOIN individuals a ON a.run_id = l.run_id AND a.id = l.ancestor\n"
    "LEFT JOIN operators o ON o.op = a.op;\n",

    "CREATE VIEW v_species_sizes AS\n"
    "SELECT r.name AS run, s.run_id, s.generation, s.species, s.size, s.best_fitness,\n"
    "  s.mean_fitness, s.representative, s.born, s.stagnant\n"
    "FROM species s JOIN runs r ON r.run_id = s.run_id;\n",

    "CREATE VIEW v_complexity AS\n"
    "SELECT r.name AS run, i.run_id, i.generation, count(*) AS individuals,\n"
    "  avg(i.n_neurons) AS mean_neurons, max(i.n_neurons) AS max_neurons,\n"
    "  avg(i.n_conns) AS mean_conns, max(i.n_conns) AS max_conns,\n"
    "  avg(i.n_skip) AS mean_skip, max(i.n_skip) AS max_skip,\n"
    "  avg(i.n_recurrent) AS mean_recurrent, max(i.n_recurrent) AS max_recurrent\n"
    "FROM individuals i JOIN runs r ON r.run_id = i.run_id\n"
    "GROUP BY i.run_id, i.generation;\n",

    "CREATE VIEW v_checkpoints AS\n"
    "SELECT r.name AS run, c.run_id, c.generation, c.n_population,\n"
    "  length(c.state) AS state_bytes, c.created_at\n"
    "FROM checkpoints c JOIN runs r ON r.run_id = c.run_id;\n",
    V_FRONT, V_FRONT_GEN, NULL};

/* Version 1 had individuals_by_generation(run_id, generation, fitness). */
static const char *const from_v1[] = {"DROP INDEX individuals_by_generation;\n",
                                      INDIVIDUALS_BY_GENERATION, NULL};

/* Version 2 had no run notes. */
static const char *const from_v2[] = {RUN_NOTES, NULL};

/* Version 3 had no v_front (nor genome retention, which needs no schema). */
static const char *const from_v3[] = {V_FRONT, NULL};

/* Version 4 had no generations.failed. */
static const char *const from_v4[] = {
    "ALTER TABLE generations ADD COLUMN " GENERATIONS_FAILED ";\n", NULL};

/* Version 5 had no objectives (individuals.valid_acc, flash, ram, macs) and
 * no v_front_gen; v_individuals gains the new columns. */
static const char *const from_v5[] = {"ALTER TABLE individuals ADD COLUMN " IND_VALID_ACC ";\n",
                                      "ALTER TABLE individuals ADD COLUMN " IND_FLASH ";\n",
                                      "ALTER TABLE individuals ADD COLUMN " IND_RAM ";\n",
                                      "ALTER TABLE individuals ADD COLUMN " IND_MACS ";\n",
                                      "DROP VIEW v_individuals;\n",
                                      V_INDIVIDUALS,
                                      V_FRONT_GEN,
                                      NULL};

const char *const *const store_migration_sql[STORE_SCHEMA_VERSION] = {
    [1] = from_v1, [2] = from_v2, [3] = from_v3, [4] = from_v4, [5] = from_v5};
