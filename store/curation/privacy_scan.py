"""What in a text should not leave the machine: credentials (detect-secrets' detectors, and
ours for the providers it does not know and for a password written out in a sentence),
phone numbers, national ids, e-mail addresses, payment cards and IBANs, each found as a
:class:`Detection`. store/curation/privacy.py checks the memories with it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from ..model.memory import SENSITIVITY_RANK

if TYPE_CHECKING:
    pass


# The least sensitivity a memory holding each category should have.
NEEDED = {"credential": "hyper", "card": "high", "iban": "high", "national_id": "high", "phone": "medium",
          "email": "medium"}
# National phone formats understood besides the international +CC form.
PHONE_REGIONS = ("US", "GB", "DE", "FR", "ES", "PT", "IT", "NL", "CN", "JP", "IN", "BR")


# Words that follow "the password is" or "password:" when no password is given: "stored
# in the vault", "wrong", "required" … (EN, DE, FR, ES, PT).
_NOT_A_PASSWORD = (
    "stored saved kept written managed shared changed reset rotated required needed set hidden encrypted hashed "
    "expired invalid valid wrong right correct incorrect weak strong long short secure safe unsafe easy hard "
    "empty blank missing unknown known same different available enabled disabled optional mandatory "
    "in on at the a an my your his her our their its not no now also still too very being under inside "
    "somewhere there here fine okay and or for to of with from that this which what where see ask check "
    "authentication protected manager field prompt reuse "
    "im ist ein eine einer einem der die das den dem nicht gespeichert geändert falsch richtig sicher zu sehr "
    "noch unter hier dort leer bekannt neu "
    "dans sur le la les un une des pas enregistré enregistrée changé changée stocké stockée trop très faux "
    "correcte incorrecte vide ici là "
    "en el los las unos unas no guardada guardado cambiada cambiado incorrecta correcta muy demasiado "
    "vacía aquí allí segura "
    "em um uma não guardada errada certa muito"
).split()
_NOT_A_VALUE = r"(?!(?:" + "|".join(sorted(map(re.escape, _NOT_A_PASSWORD), key=len, reverse=True)) + r")(?![\w-]))"
# A password-like word: at least four characters, one of them a digit, a capital or a
# symbol, not ending in punctuation; or a word of four letters or more that is not one of
# the words above ("the password is sunflower").
_STRONG = r"(?=[^\s\"'”»]*(?-i:[0-9A-Z!@#$%^&*_+=?~-]))[^\s\"'”»]{3,}[^\s\"'”».,;:)]"
_VALUE = _NOT_A_VALUE + r"[\"'“«]?(" + _STRONG + r"|[^\W\d_]{4,})"
_PW_WORDS = (r"(?:wi-?fi\s+|wlan[\s-]?|router\s+)?(?:password|passwort|pass\s?word|passcode|passphrase|"
             r"pw|pwd|kennwort|mot de passe|code secret|contraseña|clave|senha|wachtwoord|parola d'ordine)")
_PIN_WORDS = r"(?:code\s+)?pin(?:\s?code)?"  # "the PIN is blue" is no PIN: its value must hold a digit
# "for the router", "du wifi", "der Karte": what the password is for, between it and "is".
_QUALIFIER = (r"(?:\s+(?:for|of|on|to|at|für|vom|von|zum|zur|der|des|du|de|del|da|do|di|della|van|voor)"
              r"(?:\s+[^\s:=]+){1,2}?)?")
_IS = r"(?:\s*(?::=|=|:|：)\s*|\s+(?:is now|is|was|are|ist|lautet|lautete|heißt|est|es|era|é|è|wordt)\s+)"
_PROSE_PASSWORDS = (
    r"(?i)(?<![\w-])" + _PW_WORDS + _QUALIFIER + _IS + _VALUE,
    r"(?i)(?<![\w-])" + _PIN_WORDS + _QUALIFIER + _IS + _NOT_A_VALUE + r"[\"'“«]?((?=[^\s]*\d)" + _STRONG + ")",
    # "with password X", "mit dem Passwort X", "avec le mot de passe X": X must look like one
    r"(?i)\b(?:with|using|via|mit|avec|con|com)\s+(?:the\s+|dem\s+|le\s+|la\s+|el\s+|a\s+|o\s+)?"
    r"(?:password|passwort|kennwort|mot de passe|contraseña|clave|senha|pin)\s+[\"'“«]?(" + _STRONG + ")",
    r"(?:密码|口令|パスワード)\s*(?:是|为|為|：|:|は)?\s*[\"'“「]?([A-Za-z0-9!@#$%^&*_.+=-]{4,})",
    r"(?i)\blogin\s+\S+\s+password\s+(\S{4,})",  # a .netrc line: machine … login … password …
)
# A name in code or configuration that holds a password (any value) or a secret, key or
# token (a value with letters and digits, eight characters or more); a placeholder, an
# environment variable or a call is no value.
_NAME_PREFIX = r"(?:(?<![\w.-])|(?<=\s--)|(?<=\s-))(?:(?:[A-Za-z0-9]+[_.-])*|(?-i:[a-z0-9]+)(?=(?-i:[A-Z])))"
_PLACEHOLDER = (r"(?![$%<{\[]|\*{3}|x{4,}|(?:null|none|nil|true|false|undefined|changeme|redacted|example)(?![\w-])"
                r"|your[_-]|os\.environ|process\.env|getenv|env\()")
_ENDS = r"(?=[\s\"'`,;)}\]]|$)"
_ASSIGNED_SECRETS = (
    r"(?i)" + _NAME_PREFIX + r"(?:password|passwd|passwort|kennwort|pwd|passphrase|secret_?password|"
    r"contraseña|senha|mot_?de_?passe)(?:[_.-][A-Za-z0-9]+)*\s*(?::=|=|:)\s*[\"'`]?" + _PLACEHOLDER
    + _NOT_A_VALUE + r"([^\s\"'`,;(){}<>]{4,})" + _ENDS,
    # "pin: north", "Boarding pass: gate 12" are no secrets: a PIN or a pass (in a name:
    # SMTP_PASS) needs a digit in its value
    r"(?i)" + _NAME_PREFIX + r"(?:pin|(?<=[_.-])pass)(?:[_.-][A-Za-z0-9]+)*\s*(?::=|=|:)\s*[\"'`]?" + _PLACEHOLDER
    + r"(?=[^\s\"'`]*\d)([^\s\"'`,;(){}<>]{4,})" + _ENDS,
    r"(?i)" + _NAME_PREFIX + r"(?:secret|token|api_?key|apikey|access_?key|secret_?key|private_?key|client_?secret|"
    r"auth_?token|auth_?key|credentials?)\s*(?::=|=|:)\s*[\"'`]?" + _PLACEHOLDER
    + r"(?=[^\s\"']*\d)(?=[^\s\"']*[A-Za-z])([A-Za-z0-9/+=._~-]{8,})" + _ENDS,
)


@cache
def _detector_classes() -> tuple[type, ...]:
    """detect-secrets' detectors, and ours in its form; imported on first use, so opening
    the store or the window does not pay for them."""
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.keyword import KeywordDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    class AnthropicKeyDetector(RegexBasedDetector):
        secret_type = "Anthropic API Key"
        denylist = [re.compile(r"sk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_-]{32,}")]

    class GoogleKeyDetector(RegexBasedDetector):
        secret_type = "Google API Key"
        denylist = [re.compile(r"AIza[0-9A-Za-z_-]{35}"), re.compile(r"GOCSPX-[A-Za-z0-9_-]{28}")]

    class HuggingFaceTokenDetector(RegexBasedDetector):
        secret_type = "Hugging Face Token"
        denylist = [re.compile(r"\bhf_[A-Za-z0-9]{34,}")]

    class NewerTokenDetector(RegexBasedDetector):
        """Token shapes newer than detect-secrets 1.5: OpenAI project/service keys, GitHub
        fine-grained tokens, Stripe test keys, npm tokens outside an .npmrc line."""

        secret_type = "API Token"
        denylist = [re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"),
                    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{50,}"),
                    re.compile(r"\b(?:sk|rk)_test_[0-9a-zA-Z]{24,}"),
                    re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")]

    class PasswordInProseDetector(RegexBasedDetector):
        """'my password is …', 'Passwort: …', 'lautet …', 'with password …', '密码是…': a
        password written in a sentence, in the languages of the labelled set."""

        secret_type = "Password"
        denylist = [re.compile(p) for p in _PROSE_PASSWORDS]

    class AssignedSecretDetector(RegexBasedDetector):
        """``DB_PASSWORD=…``, ``pwd=…``, ``aws_secret_access_key = …``, ``api_key: …``: a
        secret assigned to a name in code or configuration, quoted or not (detect-secrets'
        keyword detector needs the quotes)."""

        secret_type = "Secret Keyword"
        denylist = [re.compile(p) for p in _ASSIGNED_SECRETS]

    class AuthorizationHeaderDetector(RegexBasedDetector):
        """``Authorization: Bearer …`` / ``Basic …`` / ``Token …``: the credential an HTTP header carries."""

        secret_type = "Authorization Header"
        denylist = [re.compile(r"(?i)\bauthorization\s*[:=]\s*[\"']?(?:bearer|basic|token|digest|apikey)\s+"
                               r"([A-Za-z0-9._~+/-]{8,}=*)"),
                    re.compile(r"\bBearer\s+([A-Za-z0-9._~+/-]{20,}=*)")]

    return (
        AWSKeyDetector, AzureStorageKeyDetector, ArtifactoryDetector, BasicAuthDetector, DiscordBotTokenDetector,
        GitHubTokenDetector, GitLabTokenDetector, JwtTokenDetector, KeywordDetector, MailchimpDetector,
        NpmDetector, OpenAIDetector, PrivateKeyDetector, PypiTokenDetector, SendGridDetector, SlackDetector,
        SquareOAuthDetector, StripeDetector, TelegramBotTokenDetector, TwilioKeyDetector,
        AnthropicKeyDetector, GoogleKeyDetector, HuggingFaceTokenDetector, NewerTokenDetector,
        PasswordInProseDetector, AssignedSecretDetector, AuthorizationHeaderDetector,
    )


_EMAIL = re.compile(r"(?<![A-Za-z0-9_.+%-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24}(?![A-Za-z0-9_-])")
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-+/=.]*")
STRIP = " \t\r\n\"'=:"
_DIGIT_RUN = re.compile(r"\d[\d ().\-/\u2010-\u2015\u00a0]{5,}\d")
_PEM_END = re.compile(r"-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----")


@dataclass(frozen=True)
class Detection:
    """Something sensitive in a text: its category, what it is, and where ([start, end))."""

    category: str
    what: str
    start: int
    end: int

    @property
    def needed(self) -> str:
        return NEEDED[self.category]


@dataclass(frozen=True)
class Finding:
    """A detection in a memory marked less sensitive than it needs."""

    memory_id: str
    category: str
    what: str
    start: int
    end: int
    preview: str       # the first characters only
    sensitivity: str   # the memory's
    needed: str
    # What start and end count in: "text", or "context" (the strings of the memory's
    # context, one a line, in order: what an import kept of the source beside the text).
    where: str = "text"

    def line(self) -> str:
        where = "chars" if self.where == "text" else f"{self.where} chars"
        return (f"{self.memory_id}\t{self.what}\t{where} {self.start}-{self.end}\t{self.preview}\t"
                f"sensitivity {self.sensitivity}, needs {self.needed}")


@cache
def _detectors() -> tuple:
    return tuple(cls() for cls in _detector_classes())


def _occurrences(text: str, value: str) -> list[int]:
    if not value:
        return []
    out, i = [], text.find(value)
    while i >= 0:
        out.append(i)
        i = text.find(value, i + 1)
    return out


def _secret_spans(det: object, text: str) -> list[tuple[int, int]]:
    """Where ``det`` finds secrets in ``text``. A regex detector's pattern may capture the
    secret in a group (a password inside a URL) or use a group only for alternatives
    (``(ghp|gho)_…``): a group that starts inside the match is the secret."""
    if not hasattr(det, "denylist"):  # the keyword detector yields values only
        return [(i, i + len(v)) for v in dict.fromkeys(det.analyze_string(text))
                for i in _occurrences(text, v.strip("\"' "))]
    spans = []
    for pattern in det.denylist:
        for m in pattern.finditer(text):
            start, end = m.span()
            inner = [g for g in range(1, (m.lastindex or 0) + 1) if m.group(g) and m.start(g) > start]
            if inner:
                start, end = m.span(inner[-1])
            value = text[start:end]
            start += len(value) - len(value.lstrip(STRIP))
            end -= len(value) - len(value.rstrip(STRIP))
            if end - start >= 4:
                spans.append((start, end))
    return spans


def _validates(det: object) -> bool:
    """The detector checks its regex matches further (a JWT must decode)."""
    from detect_secrets.plugins.base import RegexBasedDetector

    return isinstance(det, RegexBasedDetector) and type(det).analyze_string is not RegexBasedDetector.analyze_string


@cache
def _credential_hint() -> re.Pattern | None:
    """One pattern that matches wherever any credential detector could: the union of the
    regex detectors' patterns (each with its own flags), and the keyword detector's words
    (each of its patterns needs one of them). A text it does not match holds no credential,
    and is spared the 27 detectors (most of the check's time: an import checks every text
    it brings). None when a pattern cannot be joined (a back-reference): then every text
    goes through the detectors."""
    from detect_secrets.plugins.keyword import DENYLIST

    parts = []
    for det in _detectors():
        for pattern in getattr(det, "denylist", ()):
            src = pattern.pattern
            if re.search(r"\\[1-9]|\(\?P=", src):
                return None
            src = re.sub(r"^\(\?[aiLmsux]+\)", "", src)
            letters = "".join(ch for flag, ch in ((re.I, "i"), (re.M, "m"), (re.S, "s"), (re.X, "x"))
                              if pattern.flags & flag)
            # (a verbose pattern may end in a comment: its group closes on a line of its own)
            parts.append(f"(?{letters}:{src}{chr(10) if 'x' in letters else ''})")
    parts.append("(?i:" + "|".join(DENYLIST) + ")")
    return re.compile("|".join(parts))


def _credentials(text: str) -> list[Detection]:
    hint = _credential_hint()
    if hint is not None and hint.search(text) is None:
        return []
    found = []
    for det in _detectors():
        for start, end in _secret_spans(det, text):
            if det.secret_type == "Private Key":  # the whole block, up to its END line
                m = _PEM_END.search(text, end)
                end = m.end() if m else end
            else:  # a detector may match only a token's prefix: cover the whole token
                end = start + len(text[start:_TOKEN_CHARS.match(text, end).end()].rstrip("."))
                if _validates(det) and not any(True for _ in det.analyze_string(text[start:end])):
                    continue  # e.g. a JWT whose parts do not decode
            found.append(Detection("credential", det.secret_type, start, end))
    return found


# What follows a number that counts or costs something, or precedes an amount: such a
# number is not a phone number ("1 234 567 890 euros", "030 901820 visitors").
_COUNTED = re.compile(
    r"\s*(?:[€$£¥%]|(?i:euros?|eur|dollars?|usd|pounds?|gbp|yen|yuan|rmb|francs?|chf|reais|real|pesos?|"
    r"people|persons?|visitors?|users?|customers?|members?|employees?|inhabitants?|residents?|citizens?|"
    r"times|items?|units?|copies|votes?|views?|downloads?|words?|pages?|lines?|rows?|records?|bytes?|"
    r"[kmgt]i?b|km|kg|tons?|tonnes?|miles?|met(?:er|re)s?|years?|days?|hours?|seconds?|"
    r"besucher(?:innen)?|einwohner(?:innen)?|menschen|personen|mitarbeiter(?:innen)?|kunden|nutzer|stück|mal|"
    r"visiteurs?|habitants?|personnes?|utilisateurs?|clients?|fois|visitantes?|habitantes?|personas?|"
    r"usuarios?|clientes?|veces|pessoas?)(?![\w])|元|人|次|位|名|个|欧元|美元|万|亿)")
_AMOUNT_BEFORE = re.compile(r"(?:[€$£¥]|\b(?i:eur|usd|gbp|chf|us\$|r\$))\s*$")


def _counted(text: str, start: int, end: int) -> bool:
    return bool(_COUNTED.match(text, end)) or bool(_AMOUNT_BEFORE.search(text, max(0, start - 6), start))


def _phones(text: str) -> list[Detection]:
    # phonenumbers is thorough but slow: ask it only when the text has a run of at least
    # seven digits with nothing but phone punctuation between them
    if not any(sum(c.isdigit() for c in m.group()) >= 7 for m in _DIGIT_RUN.finditer(text)):
        return []
    import phonenumbers

    spans: dict[tuple[int, int], None] = {}
    for region in (None, *PHONE_REGIONS):
        for match in phonenumbers.PhoneNumberMatcher(text, region or "ZZ", leniency=phonenumbers.Leniency.VALID):
            if not _counted(text, match.start, match.end):
                spans[(match.start, match.end)] = None
    return [Detection("phone", "phone number", a, b) for a, b in spans]


_SSN = re.compile(r"(?<![\d-])(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")
_SSN_SPACED = re.compile(r"(?i)(?:\bssn|social security(?: number| no\.?)?)\D{0,12}"
                         r"((?!000|666|9)\d{3} (?!00)\d{2} (?!0000)\d{4})(?!\d)")
_DNI = re.compile(r"(?<![\w])([XYZ]?\d{7,8})[- ]?([A-Z])(?![\w])")
_CN_ID = re.compile(r"(?<!\d)[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx](?![\dA-Za-z])")
_NIR = re.compile(r"(?<!\d)[12] ?\d{2} ?(?:0[1-9]|1[0-2]|[2-9]\d) ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}(?!\d)")


def _dni_ok(number: str, letter: str) -> bool:
    if number[0] in "XYZ":
        if len(number) != 8:
            return False
        number = str("XYZ".index(number[0])) + number[1:]
    elif len(number) != 8:
        return False
    return "TRWAGMYFPDXBNJZSQVHLCKE"[int(number) % 23] == letter


def _cn_id_ok(value: str) -> bool:
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    return "10X98765432"[sum(int(c) * w for c, w in zip(value[:17], weights)) % 11] == value[17].upper()


def _nir_ok(value: str) -> bool:
    s = value.replace(" ", "")
    body = s[:13].replace("2A", "19").replace("2B", "18")
    return 97 - int(body) % 97 == int(s[13:])


def _national_ids(text: str) -> list[Detection]:
    """US social security numbers, Spanish DNI/NIE, Chinese resident ids and French NIRs
    (the last three checksum-checked): numbers that name a person to the state."""
    found = [Detection("national_id", "US social security number", m.start(), m.end()) for m in _SSN.finditer(text)]
    found += [Detection("national_id", "US social security number", m.start(1), m.end(1))
              for m in _SSN_SPACED.finditer(text)]
    found += [Detection("national_id", "Spanish DNI/NIE", m.start(), m.end()) for m in _DNI.finditer(text)
              if _dni_ok(m.group(1), m.group(2))]
    found += [Detection("national_id", "Chinese resident id", m.start(), m.end()) for m in _CN_ID.finditer(text)
              if _cn_id_ok(m.group())]
    found += [Detection("national_id", "French social security number", m.start(), m.end())
              for m in _NIR.finditer(text) if _nir_ok(m.group())]
    return found


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _card_brand(digits: str) -> bool:
    n, two, four = len(digits), int(digits[:2]), int(digits[:4])
    return ((digits[0] == "4" and n in (13, 16, 19)) or (51 <= two <= 55 and n == 16)
            or (2221 <= four <= 2720 and n == 16) or (two in (34, 37) and n == 15)
            or ((digits.startswith("6011") or two == 65) and n == 16) or (two == 35 and n == 16)
            or (two == 62 and 16 <= n <= 19))


def _iban_ok(value: str) -> bool:
    s = value.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def scan_text(text: str) -> list[Detection]:
    """Everything sensitive in ``text``, in order; where two detections overlap, the one
    that needs the higher sensitivity (then the longer) wins."""
    found = _credentials(text) + _phones(text) + _national_ids(text)
    found += [Detection("email", "e-mail address", m.start(), m.end()) for m in _EMAIL.finditer(text)]
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if _card_brand(digits) and _luhn(digits):
            found.append(Detection("card", "payment card number", m.start(), m.end()))
    found += [Detection("iban", "IBAN", m.start(), m.end()) for m in _IBAN.finditer(text) if _iban_ok(m.group())]
    kept: list[Detection] = []  # by start; they never overlap, so a neighbour check suffices
    starts: list[int] = []
    for d in sorted(found, key=lambda d: (-SENSITIVITY_RANK[d.needed], d.start - d.end, d.start, d.what)):
        i = bisect.bisect_right(starts, d.start)
        if (i == 0 or kept[i - 1].end <= d.start) and (i == len(kept) or d.end <= kept[i].start):
            kept.insert(i, d)
            starts.insert(i, d.start)
    return kept
