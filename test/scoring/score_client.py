"""A Python client of the scoring front-end, as the spec's users write one:
requests + json, the image as nested lists (pixels file: 3*224*224 planar bytes)."""
import sys

import requests

url, key, pixels_path, form = sys.argv[1:5]
raw = open(pixels_path, "rb").read()
value = (lambda v: v) if form == "integers" else (lambda v: v / 255)
data = [[[[value(raw[c * 224 * 224 + y * 224 + x]) for x in range(224)] for y in range(224)] for c in range(3)]]
response = requests.post(url, json={"data": data}, headers={"Authorization": "Bearer " + key}, verify=sys.argv[5] if len(sys.argv) > 5 else True)
response.raise_for_status()
answer = response.json()
result = answer["result"]
print(max(range(len(result)), key=result.__getitem__), len(result), answer["time"])
