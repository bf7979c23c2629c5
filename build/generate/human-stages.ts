// The stages of `isoatlas demo --scale human`, each run in its own process, and the default size of
// the synthetic release: what the CLI needs to describe them without loading the generator.
export const HUMAN_STAGES = ['generate', 'import', 'build'] as const;
export type HumanStage = (typeof HUMAN_STAGES)[number];

export const HUMAN_GENES_DEFAULT = 62_000;
