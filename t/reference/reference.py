"""Where the reference lives, shared by the fixture generators.

t/reference/fetch-reference.sh puts Cloudflare's joint_schema_model.py (as
vendored, byte-identical, in the unsloth wheel) under build/reference/; the
generators import it from there by path and never copy it.
"""

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "build/reference/unsloth/_vendor/clef/joint_schema_model.py"
# the Qwen3 tokenizer, as published (Apache-2.0), kept in the repository
QWEN3_TOKENIZER = ROOT / "t/fixtures/tokenizer/qwen3"


def load_joint_schema_model():
    spec = importlib.util.spec_from_file_location("joint_schema_model", REFERENCE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module      # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# Cloudflare's Clef Omni joint_schema_model.py, as ollajev vendors it
# unchanged (fetch-reference.sh omni); it runs on transformers 5.10.2
OMNI_REFERENCE = ROOT / "build/reference/ollajev/_vendor/clef_omni/joint_schema_model.py"
# Qwen3's tokenizer with Qwen3-Omni's added tokens (gen_omni_tokenizer.py)
OMNI_TOKENIZER = ROOT / "t/fixtures/tokenizer/qwen3-omni"


def load_omni_joint_schema_model():
    spec = importlib.util.spec_from_file_location("omni_joint_schema_model",
                                                  OMNI_REFERENCE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
