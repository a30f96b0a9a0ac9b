import { injectable, singleton } from 'serve-fn';

export interface Voice {
  readonly id: string;
  /** Base pitch of the voice in Hz. */
  readonly pitchHz: number;
  readonly description: string;
}

/** The speakers the models know, in the order the API lists them. */
export const VOICE_IDS = ['alto', 'tenor', 'soprano'] as const;

/** The voices of VOICE_IDS; one shared instance per thread, injected where it is needed. */
@singleton()
@injectable()
export class VoiceBank {
  private readonly voices = new Map<string, Voice>([
    ['alto', { id: 'alto', pitchHz: 220, description: 'low, calm' }],
    ['tenor', { id: 'tenor', pitchHz: 330, description: 'middle, bright' }],
    ['soprano', { id: 'soprano', pitchHz: 440, description: 'high, clear' }],
  ]);

  get(id: string): Voice | undefined {
    return this.voices.get(id);
  }
}
