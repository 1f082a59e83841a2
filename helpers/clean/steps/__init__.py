"""The steps of `helpers.clean`, one file a kind (`base` is the interface they share). The package's own steps,
registered here in the order a run applies them: normalising, language ID, the quality filters, decontamination,
exact, repeated-line and near-duplicate removal, then PII masking (on the records kept, as FineWeb's pipeline does
it last)."""

from .decontaminate import Decontamination
from .exact import ExactDedup
from .fuzzy import FuzzyDedup
from .language import LanguageId
from .lines import LineDedup
from .normalize import Normalize
from .pii import PiiMask
from .quality import QualityFilters
from .registry import register_step

for _kind in (Normalize, LanguageId, QualityFilters, Decontamination, ExactDedup, LineDedup, FuzzyDedup, PiiMask):
    register_step(_kind)
