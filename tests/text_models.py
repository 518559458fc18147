"""ONNX-text models shared by test directories (tests/ is on sys.path through its conftest)."""

#: MatMul -> Relu -> Sigmoid -> Relu over an identity weight
CHAIN = """<ir_version: 8, opset_import: ["" : 17]>
chain (float[1,8] x) => (float[1,8] y) <float[8,8] w = {1,0,0,0,0,0,0,0, 0,1,0,0,0,0,0,0, 0,0,1,0,0,0,0,0, 0,0,0,1,0,0,0,0, 0,0,0,0,1,0,0,0, 0,0,0,0,0,1,0,0, 0,0,0,0,0,0,1,0, 0,0,0,0,0,0,0,1}> {
    a = MatMul(x, w)
    b = Relu(a)
    c = Sigmoid(b)
    y = Relu(c)
}
"""

#: MatMul -> Relu -> Sigmoid -> MatMul -> Relu over one identity weight read through an Identity
#: (a constant that every slice reading it must carry)
IDENTITY_CHAIN = """<ir_version: 8, opset_import: ["" : 17]>
chain (float[1,8] x) => (float[1,8] y) <float[8,8] w = {1,0,0,0,0,0,0,0, 0,1,0,0,0,0,0,0, 0,0,1,0,0,0,0,0, 0,0,0,1,0,0,0,0, 0,0,0,0,1,0,0,0, 0,0,0,0,0,1,0,0, 0,0,0,0,0,0,1,0, 0,0,0,0,0,0,0,1}> {
    wi = Identity(w)
    a = MatMul(x, wi)
    b = Relu(a)
    c = Sigmoid(b)
    d = MatMul(c, wi)
    y = Relu(d)
}
"""

#: NonZero in the middle: its output and everything shaped by it change with the input values
NONZERO = """<ir_version: 8, opset_import: ["" : 17]>
nonzero (float[1,8] x) => (float y) {
    a = Relu(x)
    b = Sigmoid(a)
    nz = NonZero(b)
    f = Cast<to = 1>(nz)
    r = Relu(f)
    fl = Flatten<axis = 0>(r)
    y = ReduceSum<keepdims = 0>(fl)
}
"""
