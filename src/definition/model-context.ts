/**
 * What `initialize(ctx)` receives: the facts Triton's Python backend passes in `args`
 * (model name and version, instance name, kind and device id, repository folder, config).
 */
export interface ModelContext {
  readonly modelName: string;
  readonly modelVersion: string;
  /** Triton's `model_instance_name`: `<model>_<index>`. */
  readonly instanceName: string;
  readonly instanceIndex: number;
  readonly instanceCount: number;
  readonly deviceKind: 'cpu' | 'gpu' | 'npu';
  readonly deviceId: number;
  /** Folder of the model's source file (Triton's model repository folder for repository models). */
  readonly modelDir: string;
  /** Parsed model configuration (config.pbtxt for repository models; the decorator options otherwise). */
  readonly config: Readonly<Record<string, unknown>>;
}

/** Extra request facts a method receives as its second argument (one per request when batched). */
export interface RequestInfo {
  readonly params: Readonly<Record<string, unknown>>;
  readonly query: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;
}
