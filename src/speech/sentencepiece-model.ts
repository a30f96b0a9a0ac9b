import protobuf from 'protobufjs';

/**
 * The pieces of a SentencePiece model file (`.model` / `.bpe.model`), in id order: what a CTC or
 * Paraformer decoder maps ids through, as funasr_onnx's SenseVoiceSmall does with
 * `SentencePieceProcessor.id_to_piece` (FunASR's C++ runtime reads the same list from tokens.json).
 * The file is a protobuf `ModelProto` (google/sentencepiece src/sentencepiece_model.proto:
 * `repeated SentencePiece pieces = 1`, each `piece = 1`, `score = 2`, `type = 3`), decoded here with
 * protobufjs. No npm SentencePiece package was used: the maintained ones are WASM builds of the
 * whole encoder, and ids → pieces needs only the model's piece list.
 */
const SentencePiece = new protobuf.Type('SentencePiece')
  .add(new protobuf.Field('piece', 1, 'string'))
  .add(new protobuf.Field('score', 2, 'float'))
  .add(new protobuf.Field('type', 3, 'int32'));
const ModelProto = new protobuf.Type('ModelProto').add(new protobuf.Field('pieces', 1, 'SentencePiece', 'repeated')).add(SentencePiece);
new protobuf.Root().define('sentencepiece').add(ModelProto);

export function sentencePiecePieces(bytes: Uint8Array): string[] {
  const model = ModelProto.decode(bytes) as unknown as { pieces?: { piece?: string }[] };
  const pieces = model.pieces ?? [];
  if (pieces.length === 0) throw new Error('it holds no pieces (not a SentencePiece ModelProto)');
  return pieces.map((p, id) => {
    if (typeof p.piece !== 'string') throw new Error(`its piece ${id} has no text`);
    return p.piece;
  });
}
