from pyhudi.storage.storage import FileInfo, Storage

__all__ = ["FileInfo", "Storage"]
