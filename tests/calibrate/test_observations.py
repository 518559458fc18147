"""The observations format (hetcc.measure.observations): what it accepts, every refusal is one line naming
file, line and column, and write -> read round-trips."""
from __future__ import annotations

import hashlib
from pathlib import Path

import onnx
import onnx.parser
import pytest

from hetcc.core.errors import UsageError
from hetcc.measure.observations import (FORMAT, format_observations, parse_observations, read_observations,
                                write_observations)
from hetcc.targets import load_target

MODEL = """<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 8] x) => (float[1, 8] y) {
    a = Relu(x)
    y = Sigmoid(a)
}
"""
HEADER = "kind,model,device,freq_mhz,layer,value,unit,source"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    p = tmp_path / "m.onnx"
    onnx.save(onnx.parser.parse_model(MODEL), str(p))
    return p


def write(tmp_path: Path, text: str, name: str = "obs.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_reads_every_kind_with_comments_free_column_order_and_defaults(tmp_path, model):
    sha = hashlib.sha256(model.read_bytes()).hexdigest()
    p = write(tmp_path, f"""# {FORMAT} written by hand
unit,value,kind,model,model_sha256,device,freq_mhz,layer,objective,planner,baseline,weight,source
ms,12.5,latency,m.onnx,{sha},gpu,767,,,,,,"MOSAIC Table I, l. 91"
mJ,3,energy,m.onnx,,big,682,0-1,,,,2,
# a comment between rows
mW,900,power,m.onnx,,npu,,1,,,,,
fraction,0.292,gain,mobilenet_v2+mnasnet1_0,,,,,latency,,single:npu,,
bool,1,plan_uses,resnet50,,little,509,,energy,exact,,,
fraction,-0.1,gain,resnet50,,,,,energy,dp,single:gpu governor=ondemand,0.5,
""")
    rows = read_observations(p, load_target("hikey970"))
    assert [r.kind for r in rows] == ["latency", "energy", "power", "gain", "plan_uses", "gain"]
    lat, en, pw, gain, uses, gain2 = rows
    assert lat.value == 12.5 and lat.freq_mhz == 767.0 and lat.layer is None and lat.model_sha256 == sha
    assert lat.models == (str(model.absolute()),) and lat.source == "MOSAIC Table I, l. 91"
    assert lat.line == 3 and lat.file == str(p) and lat.planner is None and lat.weight == 1.0
    assert en.layer == (0, 1) and en.weight == 2.0 and en.line == 4
    assert pw.freq_mhz is None and pw.layer == (1, 1) and pw.line == 6
    assert gain.models == ("mobilenet_v2", "mnasnet1_0") and gain.planner == "dp" and gain.baseline == "single:npu"
    assert uses.value == 1.0 and uses.planner == "exact" and uses.objective == "energy"
    assert gain2.value == -0.1 and gain2.baseline == "single:gpu governor=ondemand"


def test_write_then_read_round_trips(tmp_path, model):
    rows = [{"kind": "latency", "model": "m.onnx", "device": "gpu", "freq_mhz": 767.0, "layer": (2, 2),
             "value": 0.123456789, "unit": "ms", "source": "hetcc profile on x, 2025-01-01"},
            {"kind": "latency", "model": "m.onnx", "device": "gpu", "layer": (0, 3), "value": 5.0, "unit": "ms"}]
    out = write_observations(tmp_path / "sub" / "w.csv", rows, comments=["theta/rho: see side file"],
                             base_dir=tmp_path)
    text = out.read_text()
    assert text.startswith(f"# {FORMAT}") and "# theta/rho: see side file" in text
    assert "objective" not in text.splitlines()[2]          # unused columns are left out
    back = parse_observations(text, "w.csv", tmp_path)
    assert [(r.layer, r.value, r.freq_mhz) for r in back] == [((2, 2), 0.123456789, 767.0), ((0, 3), 5.0, None)]
    again = format_observations(back)
    assert again.splitlines()[1:] == text.splitlines()[2:]  # Observations write the same rows


def test_write_refuses_a_bad_row_and_writes_nothing(tmp_path):
    target = tmp_path / "w.csv"
    with pytest.raises(UsageError, match=r"w.csv line 3: column 'value': '-1.0' is negative"):
        write_observations(target, [{"kind": "latency", "model": "resnet50", "device": "gpu", "value": -1.0,
                                     "unit": "ms"}])
    assert not target.exists()


BAD = [
    ("missing column", "kind,model,value\nlatency,resnet50,3\n", r"line 1: missing required column 'unit'"),
    ("unknown column", "kind,model,value,unit,colour\n", r"line 1: unknown column 'colour'; the columns are"),
    ("unknown kind", "kind,model,device,value,unit\nspeed,resnet50,gpu,3,ms\n",
     r"line 2: column 'kind': 'speed' is not a kind of observation"),
    ("negative time", "kind,model,device,value,unit\nlatency,resnet50,gpu,-3,ms\n",
     r"line 2: column 'value': '-3' is negative; a latency is a positive number of ms"),
    ("non-finite", "kind,model,device,value,unit\nenergy,resnet50,gpu,nan,mJ\n",
     r"line 2: column 'value': 'nan' is not finite"),
    ("bad unit", "kind,model,device,value,unit\nlatency,resnet50,gpu,3,s\n",
     r"line 2: column 'unit': 's' is not the unit of a latency; write 'ms'"),
    ("unknown device", "kind,model,device,value,unit\nlatency,resnet50,dsp,3,ms\n",
     r"line 2: column 'device': 'dsp' is not a device of hikey970 \(its devices: big, little, gpu, npu\)"),
    ("not a number", "kind,model,device,freq_mhz,value,unit\nlatency,resnet50,gpu,fast,3,ms\n",
     r"column 'freq_mhz': 'fast' is not a number"),
    ("bad level", "kind,model,device,freq_mhz,value,unit\nlatency,resnet50,gpu,700,3,ms\n",
     r"column 'freq_mhz': '700' is not a DVFS level of hikey970's gpu \(104, 151"),
    ("bad layer", "kind,model,device,layer,value,unit\nlatency,resnet50,gpu,3-1,3,ms\n",
     r"column 'layer': '3-1' ends before it starts"),
    ("unknown zoo model", "kind,model,device,value,unit\nlatency,resnet51,gpu,3,ms\n",
     r"column 'model': 'resnet51' names no zoo model \(did you mean 'resnet50'\?\)"),
    ("missing file", "kind,model,device,value,unit\nlatency,nope.onnx,gpu,3,ms\n",
     r"column 'model': 'nope.onnx' is not a file"),
    ("gain without baseline", "kind,model,objective,value,unit\ngain,resnet50,latency,0.3,fraction\n",
     r"column 'baseline': '' is empty; a gain row needs"),
    ("bad planner", "kind,model,objective,baseline,value,unit\ngain,resnet50,latency,single:gpu speed=2,0.3,fraction\n",
     r"column 'baseline': 'single:gpu speed=2' is not a planner spec \(planner 'single' has no option 'speed'"),
    ("plan_uses 2", "kind,model,device,objective,value,unit\nplan_uses,resnet50,gpu,latency,2,bool\n",
     r"column 'value': '2' is not 0 or 1"),
    ("ragged", "kind,model,device,value,unit\nlatency,resnet50,gpu,3\n", r"line 2: 4 fields, the header has 5"),
    ("layer on a gain", "kind,model,layer,objective,baseline,value,unit\ngain,resnet50,1,latency,single:npu,0.3,fraction\n",
     r"column 'layer': '1' is only for latency, energy and power rows"),
    ("empty", "# only a comment\n", r"no header row"),
    ("no rows", "kind,model,value,unit\n", r"holds no observations"),
    ("zero weight", "kind,model,device,value,unit,weight\nlatency,resnet50,gpu,3,ms,0\n",
     r"column 'weight': '0' is not positive"),
    ("memory without device", "kind,model,value,unit\nmemory,resnet50,90,MB\n",
     r"column 'device': '' is empty; a memory row names the device whose runtime reported it"),
    ("memory at a clock", "kind,model,device,freq_mhz,value,unit\nmemory,resnet50,gpu,767,90,MB\n",
     r"column 'freq_mhz': '767' is for latency, energy, power and plan_uses rows; a model's memory does not "
     r"depend on the clock"),
    ("memory of a layer", "kind,model,device,layer,value,unit\nmemory,resnet50,npu,3,90,MB\n",
     r"column 'layer': '3' is only for latency, energy and power rows"),
    ("memory in GB", "kind,model,device,value,unit\nmemory,resnet50,npu,0.09,GB\n",
     r"column 'unit': 'GB' is not the unit of a memory; write 'MB'"),
    ("negative memory", "kind,model,device,value,unit\nmemory,resnet50,npu,-9,MB\n",
     r"column 'value': '-9' is negative; a model's memory is a positive number of MB"),
]


@pytest.mark.parametrize("case,text,message", BAD, ids=[b[0] for b in BAD])
def test_refusals_are_one_line_naming_file_line_and_column(tmp_path, case, text, message):
    p = write(tmp_path, text)
    with pytest.raises(UsageError) as exc:
        read_observations(p, load_target("hikey970"))
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(str(p))
    import re
    assert re.search(message, msg), msg


def test_hash_mismatch_is_refused(tmp_path, model):
    p = write(tmp_path, "kind,model,model_sha256,device,value,unit\n"
              f"latency,m.onnx,{'ab' * 32},gpu,3,ms\n")
    with pytest.raises(UsageError, match=r"line 2: model m.onnx has sha256 [0-9a-f]{12}…, the measurements were "
                       r"taken on abababababab…; profile this model again"):
        read_observations(p)


def test_not_utf8_and_directory_are_one_line(tmp_path):
    p = tmp_path / "bin.csv"
    p.write_bytes(b"kind,model\xff\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        read_observations(p)
    with pytest.raises(UsageError, match="a directory, not a regular file"):
        read_observations(tmp_path)
