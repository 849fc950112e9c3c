"""The skeleton of a CloudFormation resource type the local AWS adds to moto, written once.

moto finds a template's resource types among the direct subclasses of its ``CloudFormationModel`` (their
``cloudformation_type()``), so a type the local AWS adds is declared ``class X(Resource, CloudFormationModel)``:
``Resource`` is not itself a CloudFormationModel (a subclass of it would not be found), it answers what moto asks
of every model from four class attributes, and the type keeps only what is its own (how it is made, updated,
deleted, and the value of each GetAtt attribute).
"""

from __future__ import annotations

from typing import ClassVar


class Resource:
    """``TYPE`` (``AWS::Service::Thing``); ``NAME_PROPERTY``, the property that names it ("" when none does);
    ``PHYSICAL_ID``, the attribute holding its physical id (what Ref answers); ``ATTRIBUTES``, its GetAtt names."""

    TYPE: ClassVar[str]
    NAME_PROPERTY: ClassVar[str] = ""
    PHYSICAL_ID: ClassVar[str]
    ATTRIBUTES: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def cloudformation_type(cls) -> str:
        return cls.TYPE

    @classmethod
    def cloudformation_name_type(cls) -> str:
        return cls.NAME_PROPERTY

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in cls.ATTRIBUTES

    @property
    def physical_resource_id(self) -> str:
        return str(getattr(self, self.PHYSICAL_ID))
