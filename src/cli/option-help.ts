import { Help, type Option } from 'commander';

/**
 * What help says of an option whose default or variable commander does not hold: the server applies
 * the default (so "not given" stays distinguishable) or reads the variable itself (with its own
 * SF_ERR_ENV_INVALID message).
 */
export interface OptionNotes {
  readonly default?: string;
  readonly env?: string;
}

const notes = new WeakMap<Option, OptionNotes>();

export function withNotes<T extends Option>(option: T, extra: OptionNotes): T {
  notes.set(option, extra);
  return option;
}

/**
 * Every option's extras in one notation, commander's own `(choices: …, default: …, env: NAME)`,
 * whether commander or the server applies them.
 */
export function optionDescription(option: Option): string {
  const extra = notes.get(option);
  if (!extra) return new Help().optionDescription(option);
  const env = option.envVar ?? extra.env;
  const parts = [
    option.argChoices ? `choices: ${option.argChoices.map((choice) => JSON.stringify(choice)).join(', ')}` : '',
    extra.default === undefined ? '' : `default: ${extra.default}`,
    env === undefined ? '' : `env: ${env}`,
  ].filter(Boolean);
  return `${option.description} (${parts.join(', ')})`;
}
