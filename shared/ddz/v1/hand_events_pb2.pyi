import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Rank(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RANK_UNSPECIFIED: _ClassVar[Rank]
    RANK_THREE: _ClassVar[Rank]
    RANK_FOUR: _ClassVar[Rank]
    RANK_FIVE: _ClassVar[Rank]
    RANK_SIX: _ClassVar[Rank]
    RANK_SEVEN: _ClassVar[Rank]
    RANK_EIGHT: _ClassVar[Rank]
    RANK_NINE: _ClassVar[Rank]
    RANK_TEN: _ClassVar[Rank]
    RANK_JACK: _ClassVar[Rank]
    RANK_QUEEN: _ClassVar[Rank]
    RANK_KING: _ClassVar[Rank]
    RANK_ACE: _ClassVar[Rank]
    RANK_TWO: _ClassVar[Rank]
    RANK_BLACK_JOKER: _ClassVar[Rank]
    RANK_RED_JOKER: _ClassVar[Rank]

class ComboType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMBO_TYPE_UNSPECIFIED: _ClassVar[ComboType]
    COMBO_TYPE_SINGLE: _ClassVar[ComboType]
    COMBO_TYPE_PAIR: _ClassVar[ComboType]
    COMBO_TYPE_TRIPLE: _ClassVar[ComboType]
    COMBO_TYPE_TRIPLE_SINGLE: _ClassVar[ComboType]
    COMBO_TYPE_TRIPLE_PAIR: _ClassVar[ComboType]
    COMBO_TYPE_SOLO_CHAIN: _ClassVar[ComboType]
    COMBO_TYPE_PAIR_CHAIN: _ClassVar[ComboType]
    COMBO_TYPE_TRIPLE_CHAIN: _ClassVar[ComboType]
    COMBO_TYPE_PLANE_SINGLES: _ClassVar[ComboType]
    COMBO_TYPE_PLANE_PAIRS: _ClassVar[ComboType]
    COMBO_TYPE_FOUR_TWO_SINGLES: _ClassVar[ComboType]
    COMBO_TYPE_FOUR_TWO_PAIRS: _ClassVar[ComboType]
    COMBO_TYPE_BOMB: _ClassVar[ComboType]
    COMBO_TYPE_SKY_BOMB: _ClassVar[ComboType]
    COMBO_TYPE_ROCKET: _ClassVar[ComboType]

class BombClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BOMB_CLASS_UNSPECIFIED: _ClassVar[BombClass]
    BOMB_CLASS_SOFT: _ClassVar[BombClass]
    BOMB_CLASS_HARD: _ClassVar[BombClass]
    BOMB_CLASS_MIXED: _ClassVar[BombClass]
    BOMB_CLASS_PURE: _ClassVar[BombClass]

class Bidding(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BIDDING_UNSPECIFIED: _ClassVar[Bidding]
    BIDDING_CALL_SCORE: _ClassVar[Bidding]
    BIDDING_GRAB: _ClassVar[Bidding]

class AllPass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALL_PASS_UNSPECIFIED: _ClassVar[AllPass]
    ALL_PASS_REDEAL: _ClassVar[AllPass]
    ALL_PASS_FIRST_BIDDER_LANDLORD: _ClassVar[AllPass]

class WildcardDraw(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WILDCARD_DRAW_UNSPECIFIED: _ClassVar[WildcardDraw]
    WILDCARD_DRAW_BEFORE_BIDDING: _ClassVar[WildcardDraw]
    WILDCARD_DRAW_AFTER_LANDLORD: _ClassVar[WildcardDraw]

class Scoring(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCORING_UNSPECIFIED: _ClassVar[Scoring]
    SCORING_POINTS: _ClassVar[Scoring]
    SCORING_CT_POINTS: _ClassVar[Scoring]
    SCORING_BEANS: _ClassVar[Scoring]

class BidAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BID_ACTION_UNSPECIFIED: _ClassVar[BidAction]
    BID_ACTION_PASS: _ClassVar[BidAction]
    BID_ACTION_CALL: _ClassVar[BidAction]
    BID_ACTION_GRAB: _ClassVar[BidAction]

class Side(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SIDE_UNSPECIFIED: _ClassVar[Side]
    SIDE_LANDLORD: _ClassVar[Side]
    SIDE_FARMERS: _ClassVar[Side]

class MoveBy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MOVE_BY_UNSPECIFIED: _ClassVar[MoveBy]
    MOVE_BY_PLAYER: _ClassVar[MoveBy]
    MOVE_BY_BOT_SEAT: _ClassVar[MoveBy]
    MOVE_BY_BOT_TURN_TIMEOUT: _ClassVar[MoveBy]
    MOVE_BY_BOT_AUTO_PLAY: _ClassVar[MoveBy]
    MOVE_BY_BOT_CONNECTION_LOST: _ClassVar[MoveBy]
    MOVE_BY_BOT_LEFT: _ClassVar[MoveBy]

class DisconnectReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DISCONNECT_REASON_UNSPECIFIED: _ClassVar[DisconnectReason]
    DISCONNECT_REASON_CONNECTION_LOST: _ClassVar[DisconnectReason]
    DISCONNECT_REASON_LEFT: _ClassVar[DisconnectReason]

class AutoPlayEnd(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AUTO_PLAY_END_UNSPECIFIED: _ClassVar[AutoPlayEnd]
    AUTO_PLAY_END_ACTED: _ClassVar[AutoPlayEnd]
    AUTO_PLAY_END_RESUMED: _ClassVar[AutoPlayEnd]
RANK_UNSPECIFIED: Rank
RANK_THREE: Rank
RANK_FOUR: Rank
RANK_FIVE: Rank
RANK_SIX: Rank
RANK_SEVEN: Rank
RANK_EIGHT: Rank
RANK_NINE: Rank
RANK_TEN: Rank
RANK_JACK: Rank
RANK_QUEEN: Rank
RANK_KING: Rank
RANK_ACE: Rank
RANK_TWO: Rank
RANK_BLACK_JOKER: Rank
RANK_RED_JOKER: Rank
COMBO_TYPE_UNSPECIFIED: ComboType
COMBO_TYPE_SINGLE: ComboType
COMBO_TYPE_PAIR: ComboType
COMBO_TYPE_TRIPLE: ComboType
COMBO_TYPE_TRIPLE_SINGLE: ComboType
COMBO_TYPE_TRIPLE_PAIR: ComboType
COMBO_TYPE_SOLO_CHAIN: ComboType
COMBO_TYPE_PAIR_CHAIN: ComboType
COMBO_TYPE_TRIPLE_CHAIN: ComboType
COMBO_TYPE_PLANE_SINGLES: ComboType
COMBO_TYPE_PLANE_PAIRS: ComboType
COMBO_TYPE_FOUR_TWO_SINGLES: ComboType
COMBO_TYPE_FOUR_TWO_PAIRS: ComboType
COMBO_TYPE_BOMB: ComboType
COMBO_TYPE_SKY_BOMB: ComboType
COMBO_TYPE_ROCKET: ComboType
BOMB_CLASS_UNSPECIFIED: BombClass
BOMB_CLASS_SOFT: BombClass
BOMB_CLASS_HARD: BombClass
BOMB_CLASS_MIXED: BombClass
BOMB_CLASS_PURE: BombClass
BIDDING_UNSPECIFIED: Bidding
BIDDING_CALL_SCORE: Bidding
BIDDING_GRAB: Bidding
ALL_PASS_UNSPECIFIED: AllPass
ALL_PASS_REDEAL: AllPass
ALL_PASS_FIRST_BIDDER_LANDLORD: AllPass
WILDCARD_DRAW_UNSPECIFIED: WildcardDraw
WILDCARD_DRAW_BEFORE_BIDDING: WildcardDraw
WILDCARD_DRAW_AFTER_LANDLORD: WildcardDraw
SCORING_UNSPECIFIED: Scoring
SCORING_POINTS: Scoring
SCORING_CT_POINTS: Scoring
SCORING_BEANS: Scoring
BID_ACTION_UNSPECIFIED: BidAction
BID_ACTION_PASS: BidAction
BID_ACTION_CALL: BidAction
BID_ACTION_GRAB: BidAction
SIDE_UNSPECIFIED: Side
SIDE_LANDLORD: Side
SIDE_FARMERS: Side
MOVE_BY_UNSPECIFIED: MoveBy
MOVE_BY_PLAYER: MoveBy
MOVE_BY_BOT_SEAT: MoveBy
MOVE_BY_BOT_TURN_TIMEOUT: MoveBy
MOVE_BY_BOT_AUTO_PLAY: MoveBy
MOVE_BY_BOT_CONNECTION_LOST: MoveBy
MOVE_BY_BOT_LEFT: MoveBy
DISCONNECT_REASON_UNSPECIFIED: DisconnectReason
DISCONNECT_REASON_CONNECTION_LOST: DisconnectReason
DISCONNECT_REASON_LEFT: DisconnectReason
AUTO_PLAY_END_UNSPECIFIED: AutoPlayEnd
AUTO_PLAY_END_ACTED: AutoPlayEnd
AUTO_PLAY_END_RESUMED: AutoPlayEnd

class Card(_message.Message):
    __slots__ = ("rank", "suit", "copy")
    RANK_FIELD_NUMBER: _ClassVar[int]
    SUIT_FIELD_NUMBER: _ClassVar[int]
    COPY_FIELD_NUMBER: _ClassVar[int]
    rank: Rank
    suit: str
    copy: int
    def __init__(self, rank: _Optional[_Union[Rank, str]] = ..., suit: _Optional[str] = ..., copy: _Optional[int] = ...) -> None: ...

class Reading(_message.Message):
    __slots__ = ("type", "main", "length", "size", "bomb_class", "substitutes", "tier")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MAIN_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    BOMB_CLASS_FIELD_NUMBER: _ClassVar[int]
    SUBSTITUTES_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    type: ComboType
    main: Rank
    length: int
    size: int
    bomb_class: BombClass
    substitutes: _containers.RepeatedScalarFieldContainer[Rank]
    tier: int
    def __init__(self, type: _Optional[_Union[ComboType, str]] = ..., main: _Optional[_Union[Rank, str]] = ..., length: _Optional[int] = ..., size: _Optional[int] = ..., bomb_class: _Optional[_Union[BombClass, str]] = ..., substitutes: _Optional[_Iterable[_Union[Rank, str]]] = ..., tier: _Optional[int] = ...) -> None: ...

class BombTier(_message.Message):
    __slots__ = ("type", "size", "bomb_class", "multiplier")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    BOMB_CLASS_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    type: ComboType
    size: int
    bomb_class: BombClass
    multiplier: int
    def __init__(self, type: _Optional[_Union[ComboType, str]] = ..., size: _Optional[int] = ..., bomb_class: _Optional[_Union[BombClass, str]] = ..., multiplier: _Optional[int] = ...) -> None: ...

class KickerRules(_message.Message):
    __slots__ = ("four_as_kickers", "jokers_as_kickers", "kicker_of_main_rank")
    FOUR_AS_KICKERS_FIELD_NUMBER: _ClassVar[int]
    JOKERS_AS_KICKERS_FIELD_NUMBER: _ClassVar[int]
    KICKER_OF_MAIN_RANK_FIELD_NUMBER: _ClassVar[int]
    four_as_kickers: bool
    jokers_as_kickers: bool
    kicker_of_main_rank: bool
    def __init__(self, four_as_kickers: _Optional[bool] = ..., jokers_as_kickers: _Optional[bool] = ..., kicker_of_main_rank: _Optional[bool] = ...) -> None: ...

class BombLimits(_message.Message):
    __slots__ = ("landlord", "turn_never_came", "by_call", "passed")
    LANDLORD_FIELD_NUMBER: _ClassVar[int]
    TURN_NEVER_CAME_FIELD_NUMBER: _ClassVar[int]
    BY_CALL_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    landlord: int
    turn_never_came: int
    by_call: _containers.RepeatedCompositeFieldContainer[BombLimitByCall]
    passed: int
    def __init__(self, landlord: _Optional[int] = ..., turn_never_came: _Optional[int] = ..., by_call: _Optional[_Iterable[_Union[BombLimitByCall, _Mapping]]] = ..., passed: _Optional[int] = ...) -> None: ...

class BombLimitByCall(_message.Message):
    __slots__ = ("call", "limit")
    CALL_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    call: int
    limit: int
    def __init__(self, call: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ShowCardFactor(_message.Message):
    __slots__ = ("when", "factor")
    WHEN_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    when: str
    factor: int
    def __init__(self, when: _Optional[str] = ..., factor: _Optional[int] = ...) -> None: ...

class RuleSet(_message.Message):
    __slots__ = ("name", "rank_copies", "joker_copies", "hand_size", "bottom_size", "combo_types", "min_solo_chain", "min_pair_chain", "min_triple_chain", "kickers", "bomb_ladder", "wildcard_draws", "golden_card", "bidding", "all_pass", "show_cards", "bomb_limits", "spring_multiplier", "grab_multiplier", "show_card_factors", "show_during_deal_late", "scoring")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RANK_COPIES_FIELD_NUMBER: _ClassVar[int]
    JOKER_COPIES_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZE_FIELD_NUMBER: _ClassVar[int]
    BOTTOM_SIZE_FIELD_NUMBER: _ClassVar[int]
    COMBO_TYPES_FIELD_NUMBER: _ClassVar[int]
    MIN_SOLO_CHAIN_FIELD_NUMBER: _ClassVar[int]
    MIN_PAIR_CHAIN_FIELD_NUMBER: _ClassVar[int]
    MIN_TRIPLE_CHAIN_FIELD_NUMBER: _ClassVar[int]
    KICKERS_FIELD_NUMBER: _ClassVar[int]
    BOMB_LADDER_FIELD_NUMBER: _ClassVar[int]
    WILDCARD_DRAWS_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_CARD_FIELD_NUMBER: _ClassVar[int]
    BIDDING_FIELD_NUMBER: _ClassVar[int]
    ALL_PASS_FIELD_NUMBER: _ClassVar[int]
    SHOW_CARDS_FIELD_NUMBER: _ClassVar[int]
    BOMB_LIMITS_FIELD_NUMBER: _ClassVar[int]
    SPRING_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    GRAB_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    SHOW_CARD_FACTORS_FIELD_NUMBER: _ClassVar[int]
    SHOW_DURING_DEAL_LATE_FIELD_NUMBER: _ClassVar[int]
    SCORING_FIELD_NUMBER: _ClassVar[int]
    name: str
    rank_copies: int
    joker_copies: int
    hand_size: int
    bottom_size: int
    combo_types: _containers.RepeatedScalarFieldContainer[ComboType]
    min_solo_chain: int
    min_pair_chain: int
    min_triple_chain: int
    kickers: KickerRules
    bomb_ladder: _containers.RepeatedCompositeFieldContainer[BombTier]
    wildcard_draws: _containers.RepeatedScalarFieldContainer[WildcardDraw]
    golden_card: bool
    bidding: Bidding
    all_pass: AllPass
    show_cards: bool
    bomb_limits: BombLimits
    spring_multiplier: int
    grab_multiplier: int
    show_card_factors: _containers.RepeatedCompositeFieldContainer[ShowCardFactor]
    show_during_deal_late: int
    scoring: Scoring
    def __init__(self, name: _Optional[str] = ..., rank_copies: _Optional[int] = ..., joker_copies: _Optional[int] = ..., hand_size: _Optional[int] = ..., bottom_size: _Optional[int] = ..., combo_types: _Optional[_Iterable[_Union[ComboType, str]]] = ..., min_solo_chain: _Optional[int] = ..., min_pair_chain: _Optional[int] = ..., min_triple_chain: _Optional[int] = ..., kickers: _Optional[_Union[KickerRules, _Mapping]] = ..., bomb_ladder: _Optional[_Iterable[_Union[BombTier, _Mapping]]] = ..., wildcard_draws: _Optional[_Iterable[_Union[WildcardDraw, str]]] = ..., golden_card: _Optional[bool] = ..., bidding: _Optional[_Union[Bidding, str]] = ..., all_pass: _Optional[_Union[AllPass, str]] = ..., show_cards: _Optional[bool] = ..., bomb_limits: _Optional[_Union[BombLimits, _Mapping]] = ..., spring_multiplier: _Optional[int] = ..., grab_multiplier: _Optional[int] = ..., show_card_factors: _Optional[_Iterable[_Union[ShowCardFactor, _Mapping]]] = ..., show_during_deal_late: _Optional[int] = ..., scoring: _Optional[_Union[Scoring, str]] = ...) -> None: ...

class Fraction(_message.Message):
    __slots__ = ("numerator", "denominator")
    NUMERATOR_FIELD_NUMBER: _ClassVar[int]
    DENOMINATOR_FIELD_NUMBER: _ClassVar[int]
    numerator: int
    denominator: int
    def __init__(self, numerator: _Optional[int] = ..., denominator: _Optional[int] = ...) -> None: ...

class BeanEscapeRule(_message.Message):
    __slots__ = ("threshold", "landlord_floor", "landlord_scale", "farmer_floor", "farmer_scale")
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    LANDLORD_FLOOR_FIELD_NUMBER: _ClassVar[int]
    LANDLORD_SCALE_FIELD_NUMBER: _ClassVar[int]
    FARMER_FLOOR_FIELD_NUMBER: _ClassVar[int]
    FARMER_SCALE_FIELD_NUMBER: _ClassVar[int]
    threshold: int
    landlord_floor: int
    landlord_scale: int
    farmer_floor: int
    farmer_scale: int
    def __init__(self, threshold: _Optional[int] = ..., landlord_floor: _Optional[int] = ..., landlord_scale: _Optional[int] = ..., farmer_floor: _Optional[int] = ..., farmer_scale: _Optional[int] = ...) -> None: ...

class RoomSettings(_message.Message):
    __slots__ = ("initial_multiplier", "rake", "cap", "coefficient", "fee", "wildcard_coefficient", "hand_cap", "min_balance", "escape_penalty", "bean_escape", "bean_rounding")
    INITIAL_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    RAKE_FIELD_NUMBER: _ClassVar[int]
    CAP_FIELD_NUMBER: _ClassVar[int]
    COEFFICIENT_FIELD_NUMBER: _ClassVar[int]
    FEE_FIELD_NUMBER: _ClassVar[int]
    WILDCARD_COEFFICIENT_FIELD_NUMBER: _ClassVar[int]
    HAND_CAP_FIELD_NUMBER: _ClassVar[int]
    MIN_BALANCE_FIELD_NUMBER: _ClassVar[int]
    ESCAPE_PENALTY_FIELD_NUMBER: _ClassVar[int]
    BEAN_ESCAPE_FIELD_NUMBER: _ClassVar[int]
    BEAN_ROUNDING_FIELD_NUMBER: _ClassVar[int]
    initial_multiplier: int
    rake: Fraction
    cap: int
    coefficient: int
    fee: int
    wildcard_coefficient: Fraction
    hand_cap: int
    min_balance: int
    escape_penalty: int
    bean_escape: BeanEscapeRule
    bean_rounding: str
    def __init__(self, initial_multiplier: _Optional[int] = ..., rake: _Optional[_Union[Fraction, _Mapping]] = ..., cap: _Optional[int] = ..., coefficient: _Optional[int] = ..., fee: _Optional[int] = ..., wildcard_coefficient: _Optional[_Union[Fraction, _Mapping]] = ..., hand_cap: _Optional[int] = ..., min_balance: _Optional[int] = ..., escape_penalty: _Optional[int] = ..., bean_escape: _Optional[_Union[BeanEscapeRule, _Mapping]] = ..., bean_rounding: _Optional[str] = ...) -> None: ...

class SeatInfo(_message.Message):
    __slots__ = ("player_id", "is_bot")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    IS_BOT_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    is_bot: bool
    def __init__(self, player_id: _Optional[str] = ..., is_bot: _Optional[bool] = ...) -> None: ...

class Factor(_message.Message):
    __slots__ = ("reason", "factor", "seat", "event", "detail")
    REASON_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    reason: str
    factor: int
    seat: int
    event: int
    detail: str
    def __init__(self, reason: _Optional[str] = ..., factor: _Optional[int] = ..., seat: _Optional[int] = ..., event: _Optional[int] = ..., detail: _Optional[str] = ...) -> None: ...

class MultiplierBreakdown(_message.Message):
    __slots__ = ("factors",)
    FACTORS_FIELD_NUMBER: _ClassVar[int]
    factors: _containers.RepeatedCompositeFieldContainer[Factor]
    def __init__(self, factors: _Optional[_Iterable[_Union[Factor, _Mapping]]] = ...) -> None: ...

class LedgerLine(_message.Message):
    __slots__ = ("seat", "amount", "reason", "detail")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    seat: int
    amount: int
    reason: str
    detail: str
    def __init__(self, seat: _Optional[int] = ..., amount: _Optional[int] = ..., reason: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class Ledger(_message.Message):
    __slots__ = ("deltas", "system", "multiplier", "lines")
    DELTAS_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    deltas: _containers.RepeatedScalarFieldContainer[int]
    system: int
    multiplier: int
    lines: _containers.RepeatedCompositeFieldContainer[LedgerLine]
    def __init__(self, deltas: _Optional[_Iterable[int]] = ..., system: _Optional[int] = ..., multiplier: _Optional[int] = ..., lines: _Optional[_Iterable[_Union[LedgerLine, _Mapping]]] = ...) -> None: ...

class Balances(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, values: _Optional[_Iterable[int]] = ...) -> None: ...

class HandStarted(_message.Message):
    __slots__ = ("hand_id", "rules", "room", "seats", "first_bidder", "commitment", "client_seeds", "algorithm", "engine_version", "balances", "show_before_deal")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    ROOM_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    FIRST_BIDDER_FIELD_NUMBER: _ClassVar[int]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEEDS_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    ENGINE_VERSION_FIELD_NUMBER: _ClassVar[int]
    BALANCES_FIELD_NUMBER: _ClassVar[int]
    SHOW_BEFORE_DEAL_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    rules: RuleSet
    room: RoomSettings
    seats: _containers.RepeatedCompositeFieldContainer[SeatInfo]
    first_bidder: int
    commitment: str
    client_seeds: _containers.RepeatedScalarFieldContainer[str]
    algorithm: str
    engine_version: str
    balances: Balances
    show_before_deal: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, hand_id: _Optional[str] = ..., rules: _Optional[_Union[RuleSet, _Mapping]] = ..., room: _Optional[_Union[RoomSettings, _Mapping]] = ..., seats: _Optional[_Iterable[_Union[SeatInfo, _Mapping]]] = ..., first_bidder: _Optional[int] = ..., commitment: _Optional[str] = ..., client_seeds: _Optional[_Iterable[str]] = ..., algorithm: _Optional[str] = ..., engine_version: _Optional[str] = ..., balances: _Optional[_Union[Balances, _Mapping]] = ..., show_before_deal: _Optional[_Iterable[int]] = ...) -> None: ...

class CardsDealt(_message.Message):
    __slots__ = ("round", "hands", "bottom", "golden_card", "golden_position", "golden_receiver", "first_bidder")
    ROUND_FIELD_NUMBER: _ClassVar[int]
    HANDS_FIELD_NUMBER: _ClassVar[int]
    BOTTOM_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_CARD_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_POSITION_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_RECEIVER_FIELD_NUMBER: _ClassVar[int]
    FIRST_BIDDER_FIELD_NUMBER: _ClassVar[int]
    round: int
    hands: _containers.RepeatedCompositeFieldContainer[CardList]
    bottom: _containers.RepeatedCompositeFieldContainer[Card]
    golden_card: Card
    golden_position: int
    golden_receiver: int
    first_bidder: int
    def __init__(self, round: _Optional[int] = ..., hands: _Optional[_Iterable[_Union[CardList, _Mapping]]] = ..., bottom: _Optional[_Iterable[_Union[Card, _Mapping]]] = ..., golden_card: _Optional[_Union[Card, _Mapping]] = ..., golden_position: _Optional[int] = ..., golden_receiver: _Optional[int] = ..., first_bidder: _Optional[int] = ...) -> None: ...

class CardList(_message.Message):
    __slots__ = ("cards",)
    CARDS_FIELD_NUMBER: _ClassVar[int]
    cards: _containers.RepeatedCompositeFieldContainer[Card]
    def __init__(self, cards: _Optional[_Iterable[_Union[Card, _Mapping]]] = ...) -> None: ...

class WildcardDrawn(_message.Message):
    __slots__ = ("index", "when", "rank")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    WHEN_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    index: int
    when: WildcardDraw
    rank: Rank
    def __init__(self, index: _Optional[int] = ..., when: _Optional[_Union[WildcardDraw, str]] = ..., rank: _Optional[_Union[Rank, str]] = ...) -> None: ...

class CardsShown(_message.Message):
    __slots__ = ("seat", "when", "cards_held", "factor", "cards")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    WHEN_FIELD_NUMBER: _ClassVar[int]
    CARDS_HELD_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    when: str
    cards_held: int
    factor: int
    cards: _containers.RepeatedCompositeFieldContainer[Card]
    def __init__(self, seat: _Optional[int] = ..., when: _Optional[str] = ..., cards_held: _Optional[int] = ..., factor: _Optional[int] = ..., cards: _Optional[_Iterable[_Union[Card, _Mapping]]] = ...) -> None: ...

class BidMade(_message.Message):
    __slots__ = ("seat", "action", "score", "acted_by")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    ACTED_BY_FIELD_NUMBER: _ClassVar[int]
    seat: int
    action: BidAction
    score: int
    acted_by: MoveBy
    def __init__(self, seat: _Optional[int] = ..., action: _Optional[_Union[BidAction, str]] = ..., score: _Optional[int] = ..., acted_by: _Optional[_Union[MoveBy, str]] = ...) -> None: ...

class Redealt(_message.Message):
    __slots__ = ("round", "commitment")
    ROUND_FIELD_NUMBER: _ClassVar[int]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    round: int
    commitment: str
    def __init__(self, round: _Optional[int] = ..., commitment: _Optional[str] = ...) -> None: ...

class LandlordChosen(_message.Message):
    __slots__ = ("seat", "base", "bottom", "bomb_limits")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    BOTTOM_FIELD_NUMBER: _ClassVar[int]
    BOMB_LIMITS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    base: int
    bottom: _containers.RepeatedCompositeFieldContainer[Card]
    bomb_limits: _containers.RepeatedCompositeFieldContainer[BombLimit]
    def __init__(self, seat: _Optional[int] = ..., base: _Optional[int] = ..., bottom: _Optional[_Iterable[_Union[Card, _Mapping]]] = ..., bomb_limits: _Optional[_Iterable[_Union[BombLimit, _Mapping]]] = ...) -> None: ...

class BombLimit(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class PlayMade(_message.Message):
    __slots__ = ("seat", "cards", "reading", "acted_by")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    READING_FIELD_NUMBER: _ClassVar[int]
    ACTED_BY_FIELD_NUMBER: _ClassVar[int]
    seat: int
    cards: _containers.RepeatedCompositeFieldContainer[Card]
    reading: Reading
    acted_by: MoveBy
    def __init__(self, seat: _Optional[int] = ..., cards: _Optional[_Iterable[_Union[Card, _Mapping]]] = ..., reading: _Optional[_Union[Reading, _Mapping]] = ..., acted_by: _Optional[_Union[MoveBy, str]] = ...) -> None: ...

class Passed(_message.Message):
    __slots__ = ("seat", "acted_by")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ACTED_BY_FIELD_NUMBER: _ClassVar[int]
    seat: int
    acted_by: MoveBy
    def __init__(self, seat: _Optional[int] = ..., acted_by: _Optional[_Union[MoveBy, str]] = ...) -> None: ...

class PlayerDisconnected(_message.Message):
    __slots__ = ("seat", "escapee", "reason")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ESCAPEE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    escapee: bool
    reason: DisconnectReason
    def __init__(self, seat: _Optional[int] = ..., escapee: _Optional[bool] = ..., reason: _Optional[_Union[DisconnectReason, str]] = ...) -> None: ...

class TurnTimedOut(_message.Message):
    __slots__ = ("seat", "deadline", "turn_seconds", "timeouts", "on_auto_play", "auto_play_after")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    TURN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    ON_AUTO_PLAY_FIELD_NUMBER: _ClassVar[int]
    AUTO_PLAY_AFTER_FIELD_NUMBER: _ClassVar[int]
    seat: int
    deadline: _timestamp_pb2.Timestamp
    turn_seconds: float
    timeouts: int
    on_auto_play: bool
    auto_play_after: int
    def __init__(self, seat: _Optional[int] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_seconds: _Optional[float] = ..., timeouts: _Optional[int] = ..., on_auto_play: _Optional[bool] = ..., auto_play_after: _Optional[int] = ...) -> None: ...

class AutoPlayStarted(_message.Message):
    __slots__ = ("seat", "timeouts")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    timeouts: int
    def __init__(self, seat: _Optional[int] = ..., timeouts: _Optional[int] = ...) -> None: ...

class AutoPlayEnded(_message.Message):
    __slots__ = ("seat", "reason")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    seat: int
    reason: AutoPlayEnd
    def __init__(self, seat: _Optional[int] = ..., reason: _Optional[_Union[AutoPlayEnd, str]] = ...) -> None: ...

class PlayerReconnected(_message.Message):
    __slots__ = ("seat",)
    SEAT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    def __init__(self, seat: _Optional[int] = ...) -> None: ...

class PlayerEscaped(_message.Message):
    __slots__ = ("seat", "escape_multiplier")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ESCAPE_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    seat: int
    escape_multiplier: MultiplierBreakdown
    def __init__(self, seat: _Optional[int] = ..., escape_multiplier: _Optional[_Union[MultiplierBreakdown, _Mapping]] = ...) -> None: ...

class HandEnded(_message.Message):
    __slots__ = ("winner", "out_seat", "spring", "anti_spring", "final_hands")
    WINNER_FIELD_NUMBER: _ClassVar[int]
    OUT_SEAT_FIELD_NUMBER: _ClassVar[int]
    SPRING_FIELD_NUMBER: _ClassVar[int]
    ANTI_SPRING_FIELD_NUMBER: _ClassVar[int]
    FINAL_HANDS_FIELD_NUMBER: _ClassVar[int]
    winner: Side
    out_seat: int
    spring: bool
    anti_spring: bool
    final_hands: _containers.RepeatedCompositeFieldContainer[CardList]
    def __init__(self, winner: _Optional[_Union[Side, str]] = ..., out_seat: _Optional[int] = ..., spring: _Optional[bool] = ..., anti_spring: _Optional[bool] = ..., final_hands: _Optional[_Iterable[_Union[CardList, _Mapping]]] = ...) -> None: ...

class HandSettled(_message.Message):
    __slots__ = ("ledger", "multiplier", "landlord", "base")
    LEDGER_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    LANDLORD_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    ledger: Ledger
    multiplier: MultiplierBreakdown
    landlord: int
    base: int
    def __init__(self, ledger: _Optional[_Union[Ledger, _Mapping]] = ..., multiplier: _Optional[_Union[MultiplierBreakdown, _Mapping]] = ..., landlord: _Optional[int] = ..., base: _Optional[int] = ...) -> None: ...

class SeedRevealed(_message.Message):
    __slots__ = ("seed",)
    SEED_FIELD_NUMBER: _ClassVar[int]
    seed: str
    def __init__(self, seed: _Optional[str] = ...) -> None: ...

class BidCommand(_message.Message):
    __slots__ = ("action", "score", "by_bot")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    BY_BOT_FIELD_NUMBER: _ClassVar[int]
    action: BidAction
    score: int
    by_bot: bool
    def __init__(self, action: _Optional[_Union[BidAction, str]] = ..., score: _Optional[int] = ..., by_bot: _Optional[bool] = ...) -> None: ...

class ShowCardsCommand(_message.Message):
    __slots__ = ("cards_held",)
    CARDS_HELD_FIELD_NUMBER: _ClassVar[int]
    cards_held: int
    def __init__(self, cards_held: _Optional[int] = ...) -> None: ...

class PlayCommand(_message.Message):
    __slots__ = ("cards", "declared", "by_bot")
    CARDS_FIELD_NUMBER: _ClassVar[int]
    DECLARED_FIELD_NUMBER: _ClassVar[int]
    BY_BOT_FIELD_NUMBER: _ClassVar[int]
    cards: str
    declared: Reading
    by_bot: bool
    def __init__(self, cards: _Optional[str] = ..., declared: _Optional[_Union[Reading, _Mapping]] = ..., by_bot: _Optional[bool] = ...) -> None: ...

class PassCommand(_message.Message):
    __slots__ = ("by_bot",)
    BY_BOT_FIELD_NUMBER: _ClassVar[int]
    by_bot: bool
    def __init__(self, by_bot: _Optional[bool] = ...) -> None: ...

class DisconnectCommand(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: DisconnectReason
    def __init__(self, reason: _Optional[_Union[DisconnectReason, str]] = ...) -> None: ...

class TimeOutCommand(_message.Message):
    __slots__ = ("deadline", "turn_seconds", "auto_play_after")
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    TURN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    AUTO_PLAY_AFTER_FIELD_NUMBER: _ClassVar[int]
    deadline: _timestamp_pb2.Timestamp
    turn_seconds: float
    auto_play_after: int
    def __init__(self, deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_seconds: _Optional[float] = ..., auto_play_after: _Optional[int] = ...) -> None: ...

class ResumeCommand(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReconnectCommand(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EscapeCommand(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CommandRejected(_message.Message):
    __slots__ = ("seat", "command_type", "reason", "message", "request_id", "bid", "show_cards", "play", "disconnect", "reconnect", "escape", "time_out", "resume")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_TYPE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    BID_FIELD_NUMBER: _ClassVar[int]
    SHOW_CARDS_FIELD_NUMBER: _ClassVar[int]
    PLAY_FIELD_NUMBER: _ClassVar[int]
    PASS_FIELD_NUMBER: _ClassVar[int]
    DISCONNECT_FIELD_NUMBER: _ClassVar[int]
    RECONNECT_FIELD_NUMBER: _ClassVar[int]
    ESCAPE_FIELD_NUMBER: _ClassVar[int]
    TIME_OUT_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    seat: int
    command_type: str
    reason: str
    message: str
    request_id: str
    bid: BidCommand
    show_cards: ShowCardsCommand
    play: PlayCommand
    disconnect: DisconnectCommand
    reconnect: ReconnectCommand
    escape: EscapeCommand
    time_out: TimeOutCommand
    resume: ResumeCommand
    def __init__(self, seat: _Optional[int] = ..., command_type: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., request_id: _Optional[str] = ..., bid: _Optional[_Union[BidCommand, _Mapping]] = ..., show_cards: _Optional[_Union[ShowCardsCommand, _Mapping]] = ..., play: _Optional[_Union[PlayCommand, _Mapping]] = ..., disconnect: _Optional[_Union[DisconnectCommand, _Mapping]] = ..., reconnect: _Optional[_Union[ReconnectCommand, _Mapping]] = ..., escape: _Optional[_Union[EscapeCommand, _Mapping]] = ..., time_out: _Optional[_Union[TimeOutCommand, _Mapping]] = ..., resume: _Optional[_Union[ResumeCommand, _Mapping]] = ..., **kwargs) -> None: ...
