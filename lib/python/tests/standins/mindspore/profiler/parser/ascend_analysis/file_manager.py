"""Stand-in: what MindSpore 2.4's dynamic_profiler.py uses of FileManager."""
import json
import os


class FileManager:
    @staticmethod
    def create_json_file(dir_path, data, name, indent=None):
        os.makedirs(dir_path, exist_ok=True)
        with open(os.path.join(dir_path, name), "w") as f:
            json.dump(data, f, indent=indent)
