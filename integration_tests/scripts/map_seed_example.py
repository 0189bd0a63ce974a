"""The seeds' "Preprocessing with TensorDict.map" example, as written.

Usage: python map_seed_example.py DATASET_FOLDER START_METHOD

``DATASET_FOLDER`` holds a memory-mapped TensorDict with "images" and "labels" (see
integration_tests/test_map_seed_example.py); the example flips the images and clusters
the labels in place, in 4 worker processes started with START_METHOD.
"""

import sys

import torch
import torch.multiprocessing

from tensordict import TensorDict


def process_data(data):
    images = data.get("images").flip(-2).clone()
    labels = data.get("labels") // 10
    # we update the td inplace
    data.set_("images", images)  # flip image
    data.set_("labels", labels)  # cluster labels


if __name__ == "__main__":
    torch.multiprocessing.set_start_method(sys.argv[2])
    data = TensorDict.load_memmap(sys.argv[1])
    # process 1 images at a time
    data_preproc = data.map(process_data, num_workers=4, chunksize=0, pbar=True)
    print("result:", data_preproc)
